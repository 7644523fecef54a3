//! The orders ATen's CPU kernels leave equal elements in. ATen's sort, topk, mode and
//! median call libstdc++'s `std::sort`, `std::nth_element` and `std::partial_sort` (GCC's
//! introsort / introselect / heap select, deterministic but not stable), and kthvalue its
//! own quickselect (Sedgewick's, from TH). Which index a tie reports is whatever those
//! algorithms leave, so they are reimplemented here step for step: the same pivots, the
//! same partitions, the same heap moves, on the same comparator. (A stable sort needs no
//! such care: its result is unique, and `slice::sort_by` gives it.)
//!
//! Every function takes the comparator `less` (a strict weak order for the results to be
//! sorted; with one that is not, as ATen's mode compares NaN with `<`, the moves are still
//! libstdc++'s, and an index it would run past the range is a panic here, where C++ reads
//! out of bounds).

/// Runs below this length are left to the final insertion sort (libstdc++'s `_S_threshold`).
const THRESHOLD: usize = 16;

/// floor(log2(n)) for n >= 1 (libstdc++'s `__lg`).
fn lg(n: usize) -> usize {
    (usize::BITS - 1 - n.leading_zeros()) as usize
}

/// libstdc++'s `std::sort`: introsort down to runs of 16 (median-of-three quicksort, a
/// heapsort past 2·log2(n) levels), then one insertion sort over the whole range.
pub fn sort<E: Copy>(v: &mut [E], less: &impl Fn(&E, &E) -> bool) {
    let n = v.len();
    if n < 2 {
        return;
    }
    introsort_loop(v, 0, n, 2 * lg(n), less);
    if n > THRESHOLD {
        insertion_sort(v, 0, THRESHOLD, less);
        for i in THRESHOLD..n {
            linear_insert(v, i, less);
        }
    } else {
        insertion_sort(v, 0, n, less);
    }
}

/// libstdc++'s `std::nth_element`: introselect down to runs of 3, then an insertion sort.
pub fn nth_element<E: Copy>(v: &mut [E], nth: usize, less: &impl Fn(&E, &E) -> bool) {
    let n = v.len();
    if nth >= n {
        return;
    }
    let (mut first, mut last) = (0, n);
    let mut depth = 2 * lg(n);
    while last - first > 3 {
        if depth == 0 {
            heap_select(&mut v[first..last], nth + 1 - first, less);
            v.swap(first, nth);
            return;
        }
        depth -= 1;
        let cut = partition_pivot(v, first, last, less);
        if cut <= nth {
            first = cut;
        } else {
            last = cut;
        }
    }
    insertion_sort(v, first, last, less);
}

/// libstdc++'s `std::partial_sort`: the `middle` least elements, sorted, in front (a heap
/// of them over the rest, then a heap sort).
pub fn partial_sort<E: Copy>(v: &mut [E], middle: usize, less: &impl Fn(&E, &E) -> bool) {
    heap_select(v, middle, less);
    sort_heap(&mut v[..middle], less);
}

fn introsort_loop<E: Copy>(
    v: &mut [E],
    first: usize,
    mut last: usize,
    mut depth: usize,
    less: &impl Fn(&E, &E) -> bool,
) {
    while last - first > THRESHOLD {
        if depth == 0 {
            // libstdc++'s __partial_sort(first, last, last): a heap sort of the range.
            partial_sort(&mut v[first..last], last - first, less);
            return;
        }
        depth -= 1;
        let cut = partition_pivot(v, first, last, less);
        introsort_loop(v, cut, last, depth, less);
        last = cut;
    }
}

/// The median of v[first + 1], v[mid], v[last - 1] swapped into v[first], then a Hoare
/// partition of [first + 1, last) around it; returns the cut (`__unguarded_partition_pivot`).
fn partition_pivot<E: Copy>(
    v: &mut [E],
    first: usize,
    last: usize,
    less: &impl Fn(&E, &E) -> bool,
) -> usize {
    let mid = first + (last - first) / 2;
    let (a, b, c) = (first + 1, mid, last - 1);
    let median = if less(&v[a], &v[b]) {
        if less(&v[b], &v[c]) {
            b
        } else if less(&v[a], &v[c]) {
            c
        } else {
            a
        }
    } else if less(&v[a], &v[c]) {
        a
    } else if less(&v[b], &v[c]) {
        c
    } else {
        b
    };
    v.swap(first, median);
    // The pivot stays at `first` while [first + 1, last) is partitioned.
    let pivot = v[first];
    let (mut lo, mut hi) = (first + 1, last);
    loop {
        while less(&v[lo], &pivot) {
            lo += 1;
        }
        hi -= 1;
        while less(&pivot, &v[hi]) {
            hi -= 1;
        }
        if lo >= hi {
            return lo;
        }
        v.swap(lo, hi);
        lo += 1;
    }
}

/// Insertion sort of [first, last): an element less than the first moves to the front,
/// any other walks left past the greater ones (`__insertion_sort`).
fn insertion_sort<E: Copy>(v: &mut [E], first: usize, last: usize, less: &impl Fn(&E, &E) -> bool) {
    if first == last {
        return;
    }
    for i in first + 1..last {
        if less(&v[i], &v[first]) {
            let x = v[i];
            v.copy_within(first..i, first + 1);
            v[first] = x;
        } else {
            linear_insert(v, i, less);
        }
    }
}

/// v[i] walked left past the elements greater than it (`__unguarded_linear_insert`; the
/// walk stops at index 0, where libstdc++ relies on a lesser element before it).
fn linear_insert<E: Copy>(v: &mut [E], mut i: usize, less: &impl Fn(&E, &E) -> bool) {
    let x = v[i];
    while i > 0 && less(&x, &v[i - 1]) {
        v[i] = v[i - 1];
        i -= 1;
    }
    v[i] = x;
}

/// The `middle` least elements of `v` as a max-heap in front (`__heap_select`).
fn heap_select<E: Copy>(v: &mut [E], middle: usize, less: &impl Fn(&E, &E) -> bool) {
    make_heap(&mut v[..middle], less);
    for i in middle..v.len() {
        if less(&v[i], &v[0]) {
            pop_heap(v, middle, i, less);
        }
    }
}

fn make_heap<E: Copy>(v: &mut [E], less: &impl Fn(&E, &E) -> bool) {
    let len = v.len();
    if len < 2 {
        return;
    }
    let mut parent = (len - 2) / 2;
    loop {
        let x = v[parent];
        adjust_heap(v, parent, len, x, less);
        if parent == 0 {
            return;
        }
        parent -= 1;
    }
}

fn sort_heap<E: Copy>(v: &mut [E], less: &impl Fn(&E, &E) -> bool) {
    let mut last = v.len();
    while last > 1 {
        last -= 1;
        pop_heap(v, last, last, less);
    }
}

/// The heap v[..len]'s top moved to v[result], v[result]'s old value sifted into the heap.
fn pop_heap<E: Copy>(v: &mut [E], len: usize, result: usize, less: &impl Fn(&E, &E) -> bool) {
    let x = v[result];
    v[result] = v[0];
    adjust_heap(v, 0, len, x, less);
}

/// `__adjust_heap`: the hole at `hole` walked down to a leaf along the greater children,
/// then `x` pushed up from there.
fn adjust_heap<E: Copy>(
    v: &mut [E],
    mut hole: usize,
    len: usize,
    x: E,
    less: &impl Fn(&E, &E) -> bool,
) {
    let top = hole;
    let mut child = hole;
    while child < (len - 1) / 2 {
        child = 2 * (child + 1);
        if less(&v[child], &v[child - 1]) {
            child -= 1;
        }
        v[hole] = v[child];
        hole = child;
    }
    if len.is_multiple_of(2) && child == (len - 2) / 2 {
        child = 2 * (child + 1);
        v[hole] = v[child - 1];
        hole = child - 1;
    }
    // __push_heap
    while hole > top {
        let parent = (hole - 1) / 2;
        if !less(&v[parent], &x) {
            break;
        }
        v[hole] = v[parent];
        hole = parent;
    }
    v[hole] = x;
}

/// ATen's `quick_select_template` (kthvalue): after it, `v[k]` is the element a sort by
/// `gt`-reversed order would put there. `gt` is ATen's "greater or NaN"; pivots are the
/// median of three of the ends and the middle, the partition Sedgewick's.
pub fn quick_select<E: Copy>(v: &mut [E], k: usize, gt: &impl Fn(&E, &E) -> bool) {
    // Signed, as ATen's: the right end can step to -1 (below the range) and end the loop.
    let (mut l, mut r) = (0isize, v.len() as isize - 1);
    let k = k as isize;
    let at = |v: &[E], i: isize| v[i as usize];
    let swap = |v: &mut [E], i: isize, j: isize| v.swap(i as usize, j as usize);
    loop {
        if r <= l {
            return;
        }
        if r == l + 1 {
            if gt(&at(v, l), &at(v, r)) {
                swap(v, l, r);
            }
            return;
        }
        let p = (l + r) >> 1;
        swap(v, p, l + 1);
        if gt(&at(v, l + 1), &at(v, r)) {
            swap(v, l + 1, r);
        }
        if gt(&at(v, l), &at(v, r)) {
            swap(v, l, r);
        }
        if gt(&at(v, l + 1), &at(v, l)) {
            swap(v, l + 1, l);
        }
        let (mut i, mut j) = (l + 1, r);
        let pivot = at(v, l);
        loop {
            i += 1;
            while gt(&pivot, &at(v, i)) {
                i += 1;
            }
            j -= 1;
            while gt(&at(v, j), &pivot) {
                j -= 1;
            }
            if j < i {
                break;
            }
            swap(v, i, j);
        }
        swap(v, l, j);
        if j <= k {
            l = i;
        }
        if j >= k {
            r = j - 1;
        }
    }
}
