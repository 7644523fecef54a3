//! The contiguity bits PyTorch caches ([`Flags`], computed by [`Flags::compute`], kept by
//! [`CachedFlags`]) and the layout tests behind them (row-major, channels-last, dense in
//! some order, provably non-overlapping).

use super::LayoutRef;
use crate::shape::{CHANNELS_LAST_3D_ORDER, CHANNELS_LAST_ORDER, MAX_DIMS, MAX_INLINE_DIMS};
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU8, Ordering};

/// Cached layout bits (c10's `is_contiguous_`, `is_channels_last_contiguous_`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Flags(u8);

impl Flags {
    pub const CONTIGUOUS: u8 = 1;
    pub const CHANNELS_LAST_CONTIGUOUS: u8 = 2;
    pub const CHANNELS_LAST_3D_CONTIGUOUS: u8 = 4;
    pub const CHANNELS_LAST_STRIDES: u8 = 8;
    pub const CHANNELS_LAST_3D_STRIDES: u8 = 16;
    pub const NON_OVERLAPPING_AND_DENSE: u8 = 32;
    const ALL: u8 = Self::CONTIGUOUS
        | Self::CHANNELS_LAST_CONTIGUOUS
        | Self::CHANNELS_LAST_3D_CONTIGUOUS
        | Self::CHANNELS_LAST_STRIDES
        | Self::CHANNELS_LAST_3D_STRIDES
        | Self::NON_OVERLAPPING_AND_DENSE;

    #[inline]
    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }

    /// The refresh: the combination rules of c10's `TensorImpl::_refresh_contiguous`
    /// (called through [`CachedFlags`]; the tests call it directly).
    #[inline]
    pub fn compute(sizes: &[i64], strides: &[i64], numel: i64) -> Flags {
        let contiguous = is_contiguous(sizes, strides, numel);
        let mut f = contiguous as u8 * Self::CONTIGUOUS;
        let mut dense_by_format = contiguous;
        if let (Ok(n), Ok(st)) = (<&[i64; 4]>::try_from(sizes), <&[i64; 4]>::try_from(strides)) {
            let cl = is_contiguous_in_order(n, st, &CHANNELS_LAST_ORDER);
            f |= cl as u8 * Self::CHANNELS_LAST_CONTIGUOUS;
            f |=
                strides_like_order(n, st, &CHANNELS_LAST_ORDER) as u8 * Self::CHANNELS_LAST_STRIDES;
            dense_by_format |= cl;
        } else if let (Ok(n), Ok(st)) =
            (<&[i64; 5]>::try_from(sizes), <&[i64; 5]>::try_from(strides))
        {
            // c10: for 5 dims the 2d bits are false and is_channels_last_3d_ is the plain
            // strides-like test.
            let cl3 = is_contiguous_in_order(n, st, &CHANNELS_LAST_3D_ORDER);
            f |= cl3 as u8 * Self::CHANNELS_LAST_3D_CONTIGUOUS;
            f |= strides_like_order(n, st, &CHANNELS_LAST_3D_ORDER) as u8
                * Self::CHANNELS_LAST_3D_STRIDES;
            dense_by_format |= cl3;
        }
        if dense_by_format || non_overlapping_and_dense(sizes, strides) {
            f |= Self::NON_OVERLAPPING_AND_DENSE;
        }
        Flags(f)
    }
}

/// The [`Flags`] of one immutable layout, computed by [`Flags::compute`] the first time
/// they are read, then kept. c10 refreshes its bits whenever a TensorImpl's sizes change;
/// our layouts never change after construction, so the refresh can wait for the first
/// question. A tensor that is asked pays once, as before; one that is never asked (a view
/// only indexed, or passed on and released) never pays (benches/c/count.sh: 100 to 160
/// instructions per view, a fifth of a transpose).
///
/// Threads may race to fill it: each computes the same bits from the same immutable
/// layout and stores the same byte, so `Relaxed` is enough (the byte publishes nothing
/// else).
pub struct CachedFlags(AtomicU8);

impl CachedFlags {
    /// Set once the other bits hold the computed flags.
    const KNOWN: u8 = 0x80;

    /// Not computed yet.
    #[inline]
    pub const fn new() -> Self {
        CachedFlags(AtomicU8::new(0))
    }

    /// The flags of `layout` with `numel` elements (the layout this cache belongs to).
    #[inline]
    pub fn get(&self, layout: LayoutRef, numel: i64) -> Flags {
        let f = self.0.load(Ordering::Relaxed);
        if f & Self::KNOWN != 0 {
            return Flags(f & !Self::KNOWN);
        }
        self.fill(layout, numel)
    }

    /// The flags if they have been computed already (nothing is computed here).
    #[inline]
    pub fn known(&self) -> Option<Flags> {
        let f = self.0.load(Ordering::Relaxed);
        (f & Self::KNOWN != 0).then_some(Flags(f & !Self::KNOWN))
    }

    // Out of line: one copy of the refresh, run once per tensor that is asked.
    #[inline(never)]
    fn fill(&self, layout: LayoutRef, numel: i64) -> Flags {
        let f = Flags::compute(layout.sizes, layout.strides, numel);
        const { assert!(Flags::ALL & CachedFlags::KNOWN == 0) };
        self.0.store(f.0 | Self::KNOWN, Ordering::Relaxed);
        f
    }
}

/// Row-major contiguity; size-1 dims are skipped, numel 0 is contiguous.
#[inline]
pub fn is_contiguous(sizes: &[i64], strides: &[i64], numel: i64) -> bool {
    if numel == 0 {
        return true;
    }
    let mut expected = 1i64;
    for (&n, &s) in sizes.iter().zip(strides).rev() {
        if n != 1 {
            if s != expected {
                return false;
            }
            expected = expected.wrapping_mul(n);
        }
    }
    true
}

/// Dense in the given innermost-first order; size-1 dims skipped, no numel shortcut.
#[inline]
fn is_contiguous_in_order<const D: usize>(n: &[i64; D], st: &[i64; D], order: &[usize; D]) -> bool {
    let mut expected = 1i64;
    for &d in order {
        if n[d] != 1 {
            if st[d] != expected {
                return false;
            }
            expected = expected.wrapping_mul(n[d]);
        }
    }
    true
}

/// c10's `is_channels_last_strides_2d_s4` / `_3d_s5` walk: are the strides ordered like
/// the memory format (used by `suggest_memory_format`)?
#[inline]
fn strides_like_order<const D: usize>(n: &[i64; D], st: &[i64; D], order: &[usize; D]) -> bool {
    if st[1] == 0 {
        return false;
    }
    let mut min = 0i64;
    for &d in order {
        if n[d] == 0 || st[d] < min {
            return false;
        }
        // Ambiguous NC11 / N1HW-like cases: dim 0 must not tie with the channel stride.
        if d == 0 && min == st[1] {
            return false;
        }
        min = st[d].wrapping_mul(n[d].max(1));
    }
    true
}

/// Sorting networks (compare-exchanges of slots `a < b`) for 2..=5 keys (ranks up to
/// NCDHW; more dims take the bit-mask walk of `non_overlapping_and_dense`): sorting by a
/// fixed sequence of branch-free compare-exchanges is cheaper than any data-dependent
/// sort at these lengths. Checked exhaustively on 0/1 inputs by the tests.
const NETWORK_2: [(usize, usize); 1] = [(0, 1)];
const NETWORK_3: [(usize, usize); 3] = [(0, 2), (0, 1), (1, 2)];
const NETWORK_4: [(usize, usize); 5] = [(0, 1), (2, 3), (0, 2), (1, 3), (1, 2)];
const NETWORK_5: [(usize, usize); 9] = [
    (0, 3),
    (1, 4),
    (0, 2),
    (1, 3),
    (0, 1),
    (2, 4),
    (1, 2),
    (3, 4),
    (2, 3),
];

/// c10's formulation for `D` <= 5 dims: sort the (stride, size) pairs of the dims with a
/// sorting network, then walk. A dim of size < 2 gets the key `u64::MAX`, above every
/// stride, so those dims sort last and end the walk. Equal strides may land in either
/// order: the walk fails on them either way (the requirement grows past a repeated
/// stride), unless it has saturated at i64::MAX, when every remaining stride must equal it.
// Always inlined: one copy per D, with the network's (a, b) pairs as constants (the
// compare-exchanges then compile to branch-free selects on registers).
#[inline(always)]
fn dense_by_network<const D: usize>(
    sizes: &[i64; D],
    strides: &[i64; D],
    network: &[(usize, usize)],
) -> bool {
    let mut key = [0u64; D];
    let mut negative = 0i64;
    for i in 0..D {
        let counted = sizes[i] >= 2;
        // A negative stride of a counted dim never equals the (positive) requirement.
        negative |= if counted { strides[i] } else { 0 };
        key[i] = if counted { strides[i] as u64 } else { u64::MAX };
    }
    if negative < 0 {
        return false;
    }
    let mut n = *sizes;
    for &(a, b) in network {
        let (ka, kb, na, nb) = (key[a], key[b], n[a], n[b]);
        let swap = ka > kb;
        key[a] = if swap { kb } else { ka };
        key[b] = if swap { ka } else { kb };
        n[a] = if swap { nb } else { na };
        n[b] = if swap { na } else { nb };
    }
    let mut req = 1i64;
    for (&k, &size) in key.iter().zip(&n) {
        if k == u64::MAX {
            break;
        }
        if k != req as u64 {
            return false;
        }
        req = req.saturating_mul(size);
    }
    true
}

/// Provably no two elements at one offset (a sufficient test, not an exact one): with the
/// dims of size >= 2 sorted by stride, each stride exceeds the farthest offset the smaller
/// ones reach (`Σ stride·(size-1)`), so the dims nest. True for every layout made from a
/// non-overlapping one by slicing, permuting and striding, and for layouts without
/// elements; false for every layout with a stride-0 dim of size >= 2, every other
/// self-overlapping one, and a few exotic non-overlapping ones (sizes {3, 2}, strides
/// {2, 3}). Strides are those of a validated layout (>= 0, extent within i64).
pub fn non_overlapping(sizes: &[i64], strides: &[i64]) -> bool {
    if sizes.contains(&0) {
        return true;
    }
    let mut dims: SmallVec<[(i64, i64); MAX_INLINE_DIMS]> = sizes
        .iter()
        .zip(strides)
        .filter(|&(&n, _)| n >= 2)
        .map(|(&n, &st)| (st, n))
        .collect();
    dims.sort_unstable();
    let mut reach = 0i64;
    for (st, n) in dims {
        if st <= reach {
            return false;
        }
        // A validated layout's extent fits in i64; saturating keeps the answer safe anyway.
        reach = reach.saturating_add(st.saturating_mul(n - 1));
    }
    true
}

/// Every element at a distinct offset, and together filling a dense block, in some dim
/// order: c10's rule — dims of size < 2 are ignored; the others, by increasing stride,
/// must have strides 1, n0, n0·n1, ...
pub fn non_overlapping_and_dense(sizes: &[i64], strides: &[i64]) -> bool {
    let d = sizes.len();
    debug_assert_eq!(d, strides.len());
    // Computed for every new TensorImpl that is neither contiguous nor channels-last (every
    // transpose, permute, expand, ...): <= 5 dims sort with a network.
    macro_rules! small {
        ($d:literal, $network:expr) => {
            if let (Ok(n), Ok(st)) = (
                <&[i64; $d]>::try_from(sizes),
                <&[i64; $d]>::try_from(strides),
            ) {
                return dense_by_network(n, st, &$network);
            }
        };
    }
    match d {
        0 => return true,
        1 => return sizes[0] < 2 || strides[0] == 1,
        _ => {}
    }
    small!(2, NETWORK_2);
    small!(3, NETWORK_3);
    small!(4, NETWORK_4);
    small!(5, NETWORK_5);
    // A TensorImpl has at most MAX_DIMS (64) dims (CheckedLayout refuses more): one bit each.
    debug_assert!(d <= MAX_DIMS && MAX_DIMS <= 64);
    // 6..=64 dims: the same walk without sorting. Each step matches one unmatched
    // dim of size >= 2 whose stride equals the requirement (1, then req·n). It agrees with
    // the sorted walk: a match is the next dim in stride order; two dims sharing a stride
    // fail in both (the requirement grows past it), unless it has saturated at i64::MAX,
    // when in both every remaining stride must equal it, in any order.
    let mut unmatched: u64 = 0;
    for (i, &n) in sizes.iter().enumerate() {
        unmatched |= u64::from(n >= 2) << i;
    }
    let mut req = 1i64;
    while unmatched != 0 {
        let mut rest = unmatched;
        loop {
            if rest == 0 {
                return false;
            }
            let i = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            if strides[i] == req {
                unmatched &= !(1u64 << i);
                req = req.saturating_mul(sizes[i]);
                break;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::{channels_last_3d_strides, channels_last_strides, contiguous_strides};

    #[test]
    fn non_overlapping_nests_or_refuses() {
        for (sizes, strides, want) in [
            (&[][..], &[][..], true),
            (&[4, 3][..], &[3, 1][..], true),
            (&[3, 4][..], &[1, 3][..], true),  // a transpose
            (&[2, 2][..], &[8, 2][..], true),  // a strided slice
            (&[2, 0][..], &[0, 0][..], true),  // no elements
            (&[1, 5][..], &[0, 1][..], true),  // size-1 dims do not count
            (&[2, 3][..], &[0, 1][..], false), // expanded
            (&[2, 2][..], &[1, 1][..], false), // byte strides {4, 4} over float32
            (&[2, 2][..], &[2, 2][..], false),
            (&[3, 2][..], &[2, 3][..], false), // exotic: distinct offsets, not nested
        ] {
            assert_eq!(
                non_overlapping(sizes, strides),
                want,
                "{sizes:?} {strides:?}"
            );
        }
    }

    fn flags(sizes: &[i64], strides: &[i64]) -> Flags {
        let numel = sizes.iter().product();
        Flags::compute(sizes, strides, numel)
    }

    /// The cache answers exactly what the refresh computes, on the first read and after
    /// it, for layouts that set each bit (the KNOWN marker never shows through).
    #[test]
    fn cached_flags_equal_the_refresh() {
        let n4 = [2i64, 3, 4, 5];
        let n5 = [2i64, 3, 4, 5, 6];
        let layouts: Vec<(Vec<i64>, Vec<i64>)> = vec![
            (vec![], vec![]),
            (n4.to_vec(), contiguous_strides(&n4).unwrap().to_vec()),
            (n4.to_vec(), channels_last_strides(&n4).unwrap().to_vec()),
            (n5.to_vec(), channels_last_3d_strides(&n5).unwrap().to_vec()),
            (vec![3, 4], vec![1, 3]), // transposed: dense, not contiguous
            (vec![3, 4], vec![0, 1]), // expanded: neither
            (vec![3, 0], vec![7, 9]), // no elements: contiguous
            (vec![4, 4], vec![8, 1]), // a slice's rows: neither
            (
                vec![2, 3, 4, 5, 6, 7],
                contiguous_strides(&[2, 3, 4, 5, 6, 7]).unwrap().to_vec(),
            ),
        ];
        let mut seen = 0u8;
        for (sizes, strides) in &layouts {
            let l = LayoutRef::new(sizes, strides, 0);
            let numel = sizes.iter().product();
            let want = Flags::compute(sizes, strides, numel);
            let cache = CachedFlags::new();
            assert_eq!(
                cache.0.load(Ordering::Relaxed),
                0,
                "unknown before the first read"
            );
            assert_eq!(cache.get(l, numel), want, "{sizes:?} {strides:?}");
            assert_eq!(
                cache.0.load(Ordering::Relaxed),
                want.0 | CachedFlags::KNOWN,
                "kept after the first read"
            );
            assert_eq!(cache.get(l, numel), want, "{sizes:?} {strides:?}");
            seen |= want.0;
        }
        assert_eq!(seen, Flags::ALL, "every bit set by some layout");
    }

    #[test]
    fn contiguous_cases() {
        let f = flags(&[2, 3], &[3, 1]);
        assert!(f.has(Flags::CONTIGUOUS) && f.has(Flags::NON_OVERLAPPING_AND_DENSE));
        // transposed: not contiguous, but non-overlapping and dense
        let f = flags(&[3, 2], &[1, 3]);
        assert!(!f.has(Flags::CONTIGUOUS) && f.has(Flags::NON_OVERLAPPING_AND_DENSE));
        // expanded: neither
        let f = flags(&[4, 3], &[0, 1]);
        assert!(!f.has(Flags::CONTIGUOUS) && !f.has(Flags::NON_OVERLAPPING_AND_DENSE));
        // size-1 dims ignore their stride
        assert!(flags(&[2, 1, 3], &[3, 99, 1]).has(Flags::CONTIGUOUS));
        // size 0 is contiguous whatever the strides
        assert!(flags(&[2, 0, 3], &[7, 5, 2]).has(Flags::CONTIGUOUS));
        // 0-dim
        assert!(flags(&[], &[]).has(Flags::CONTIGUOUS));
        assert!(flags(&[], &[]).has(Flags::NON_OVERLAPPING_AND_DENSE));
        // sliced with a step: not dense
        let f = flags(&[3], &[2]);
        assert!(!f.has(Flags::CONTIGUOUS) && !f.has(Flags::NON_OVERLAPPING_AND_DENSE));
        assert!(flags(&[1], &[5]).has(Flags::NON_OVERLAPPING_AND_DENSE));
    }

    #[test]
    fn channels_last_cases() {
        let n = [2, 3, 4, 5];
        let cl = channels_last_strides(&n).unwrap();
        let f = flags(&n, &cl);
        assert!(f.has(Flags::CHANNELS_LAST_CONTIGUOUS));
        assert!(f.has(Flags::CHANNELS_LAST_STRIDES));
        assert!(!f.has(Flags::CONTIGUOUS));
        assert!(f.has(Flags::NON_OVERLAPPING_AND_DENSE));
        let f = flags(&n, &contiguous_strides(&n).unwrap());
        assert!(!f.has(Flags::CHANNELS_LAST_CONTIGUOUS) && !f.has(Flags::CHANNELS_LAST_STRIDES));
        // C == 1: both contiguous and channels-last contiguous (NCHW with C=1)
        let n1 = [2, 1, 4, 5];
        let f = flags(&n1, &contiguous_strides(&n1).unwrap());
        assert!(f.has(Flags::CONTIGUOUS) && f.has(Flags::CHANNELS_LAST_CONTIGUOUS));
        // N,C,1,1: contiguous strides [C,1,1,1] are channels-last contiguous, but the
        // strides-like walk refuses the tie between dim 0 and the channel stride? No:
        // st = [3,1,1,1]; order 1,3,2,0: min goes 0 -> 3 at d=1; d=3 stride 1 < 3 -> false.
        let n2 = [2, 3, 1, 1];
        let f = flags(&n2, &contiguous_strides(&n2).unwrap());
        assert!(f.has(Flags::CONTIGUOUS) && f.has(Flags::CHANNELS_LAST_CONTIGUOUS));
        assert!(!f.has(Flags::CHANNELS_LAST_STRIDES));
        // 3d
        let n5 = [2, 3, 4, 5, 6];
        let f = flags(&n5, &channels_last_3d_strides(&n5).unwrap());
        assert!(
            f.has(Flags::CHANNELS_LAST_3D_CONTIGUOUS) && f.has(Flags::CHANNELS_LAST_3D_STRIDES)
        );
        assert!(!f.has(Flags::CHANNELS_LAST_CONTIGUOUS) && !f.has(Flags::CHANNELS_LAST_STRIDES));
        // channels-last bits never on other ranks
        let f = flags(&[3, 4, 5], &[1, 15, 3]);
        assert!(!f.has(Flags::CHANNELS_LAST_STRIDES) && !f.has(Flags::CHANNELS_LAST_CONTIGUOUS));
        // size-0 dim: strides-like refuses
        let n0 = [2, 3, 0, 5];
        let f = flags(&n0, &channels_last_strides(&n0).unwrap());
        assert!(!f.has(Flags::CHANNELS_LAST_STRIDES));
        assert!(f.has(Flags::CONTIGUOUS));
    }

    /// c10's formulation, kept as the reference: a stable sort of the dim indices (size < 2
    /// last, the others by increasing stride), then the dense walk.
    fn reference_dense(sizes: &[i64], strides: &[i64]) -> bool {
        let mut perm: Vec<usize> = (0..sizes.len()).collect();
        perm.sort_by(|&a, &b| {
            let (sa, sb) = (sizes[a] < 2, sizes[b] < 2);
            sa.cmp(&sb).then(if sa || sb {
                std::cmp::Ordering::Equal
            } else {
                strides[a].cmp(&strides[b])
            })
        });
        let mut req = 1i64;
        for &i in &perm {
            if sizes[i] < 2 {
                return true;
            }
            if strides[i] != req {
                return false;
            }
            req = req.saturating_mul(sizes[i]);
        }
        true
    }

    /// The sorting networks sort every 0/1 input (the 0-1 principle: then they sort all).
    #[test]
    fn sorting_networks_sort() {
        fn check(d: usize, network: &[(usize, usize)]) {
            for bits in 0u32..1 << d {
                let mut v: Vec<u32> = (0..d).map(|i| bits >> i & 1).collect();
                for &(a, b) in network {
                    assert!(a < b && b < d);
                    if v[a] > v[b] {
                        v.swap(a, b);
                    }
                }
                assert!(
                    v.windows(2).all(|w| w[0] <= w[1]),
                    "{d} dims, input {bits:b}"
                );
            }
        }
        check(2, &NETWORK_2);
        check(3, &NETWORK_3);
        check(4, &NETWORK_4);
        check(5, &NETWORK_5);
    }

    /// Every layout of 0..=9 dims with sizes in 0..=3 and strides drawn from a small set
    /// (dense ones, ties, zeros, gaps) agrees with the reference.
    #[test]
    fn non_overlapping_and_dense_matches_reference() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        let (mut dense, mut not_dense) = (0, 0);
        for _ in 0..200_000 {
            let d = next(10) as usize;
            let sizes: Vec<i64> = (0..d).map(|_| next(4) as i64).collect();
            // Mostly a permuted contiguous layout (so the dense answer is common), with
            // some strides perturbed.
            let mut strides = contiguous_strides(&sizes).unwrap().to_vec();
            for i in (1..d).rev() {
                strides.swap(i, next(i as u64 + 1) as usize);
            }
            for s in strides.iter_mut() {
                match next(8) {
                    0 => *s = 0,
                    1 => *s += 1,
                    2 => *s *= 2,
                    _ => {}
                }
            }
            let want = reference_dense(&sizes, &strides);
            assert_eq!(
                non_overlapping_and_dense(&sizes, &strides),
                want,
                "sizes {sizes:?} strides {strides:?}"
            );
            if want {
                dense += 1;
            } else {
                not_dense += 1;
            }
        }
        // Both answers were exercised substantially.
        assert!(dense > 20_000 && not_dense > 20_000, "{dense} {not_dense}");
        // A saturated requirement (only reachable outside valid layouts).
        let m = i64::MAX;
        for (sizes, strides) in [
            ([m, 2, 2], [1, m, m]),
            ([m, 2, 2], [1, m, 5]),
            ([2, m, 2], [m, 1, m]),
            ([2, 2, m], [m, 3, 1]),
        ] {
            assert_eq!(
                non_overlapping_and_dense(&sizes, &strides),
                reference_dense(&sizes, &strides),
                "sizes {sizes:?} strides {strides:?}"
            );
        }
        // Negative strides (outside valid layouts): never dense when counted.
        for (sizes, strides) in [
            (&[2i64, 3][..], &[-3i64, 1][..]),
            (&[1, 3], &[-3, 1]),
            (&[2, 3, 4, 2], &[12, 4, 1, -1]),
            (&[2, 1, 4, 2], &[8, -5, 2, 1]),
            (&[2, 3, 4, 2, 2], &[48, 16, 4, 2, -1]),
        ] {
            assert_eq!(
                non_overlapping_and_dense(sizes, strides),
                reference_dense(sizes, strides),
                "sizes {sizes:?} strides {strides:?}"
            );
        }
        // Up to 64 dims (the bit mask; a tensor has no more): 2^k sizes, dense when ordered.
        for d in [9usize, 64] {
            let sizes = vec![2i64; d];
            let mut strides: Vec<i64> = (0..d).map(|i| 1i64 << (i % 62)).collect();
            strides.reverse();
            for bump in [None, Some(d / 2)] {
                let mut st = strides.clone();
                if let Some(i) = bump {
                    st[i] += 1;
                }
                assert_eq!(
                    non_overlapping_and_dense(&sizes, &st),
                    reference_dense(&sizes, &st),
                    "{d} dims, bump {bump:?}"
                );
            }
        }
    }
}
