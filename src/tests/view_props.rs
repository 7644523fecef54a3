//! Property tests of the views (docs/c-api.md, "Views") through the Rust API.
//!
//! For random bases (random shape, memory order, gaps and offset over an int64 storage
//! holding 0, 1, 2, ...) and random chains of view operations with random valid arguments,
//! a reference model keeps the *byte offset in the storage of every element* of the
//! current view, in row-major order, and transforms it per op by index arithmetic alone
//! (which old index each new index reads) — never with the stride formulas under test.
//! After each op: the sizes match the model; each element's storage offset and value match
//! it; the view lies inside its storage and shares it with the base; a write through the
//! view lands in the base's storage; the version counter is shared.

use crate::dtype::{DType, Scalar};
use crate::shape;
use crate::tensor_impl::{MemoryFormat, Tensor};
use proptest::prelude::*;

/// Storage byte offsets of a view's elements, row-major, plus its sizes and itemsize.
#[derive(Clone, Debug)]
struct Model {
    sizes: Vec<i64>,
    offs: Vec<i64>,
    itemsize: i64,
}

/// Every index of `sizes`, row-major.
fn indices(sizes: &[i64]) -> Vec<Vec<i64>> {
    let numel: i64 = sizes.iter().product();
    let mut out = Vec::with_capacity(numel as usize);
    if numel == 0 {
        return out;
    }
    let mut idx = vec![0i64; sizes.len()];
    loop {
        out.push(idx.clone());
        let mut d = sizes.len();
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < sizes[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Row-major position of `idx` in `sizes`.
fn flat(sizes: &[i64], idx: &[i64]) -> usize {
    assert_eq!(sizes.len(), idx.len());
    let mut p = 0i64;
    for (&n, &i) in sizes.iter().zip(idx) {
        assert!(i >= 0 && i < n, "model index {idx:?} outside {sizes:?}");
        p = p * n + i;
    }
    p as usize
}

/// A plain dim wrap for the model (independent of `shape::wrap_dim`).
fn w(d: i64, ndim: usize) -> usize {
    let n = ndim.max(1) as i64;
    (if d < 0 { d + n } else { d }) as usize
}

impl Model {
    /// The model of a view whose element at new index `i` is the old element `f(i).0`,
    /// `f(i).1` bytes further (for view_dtype).
    fn remap(
        &self,
        sizes: Vec<i64>,
        itemsize: i64,
        f: impl Fn(&[i64]) -> (Vec<i64>, i64),
    ) -> Model {
        let offs = indices(&sizes)
            .iter()
            .map(|ni| {
                let (oi, delta) = f(ni);
                self.offs[flat(&self.sizes, &oi)] + delta
            })
            .collect();
        Model {
            sizes,
            offs,
            itemsize,
        }
    }

    fn same(&self, sizes: Vec<i64>, f: impl Fn(&[i64]) -> Vec<i64>) -> Model {
        self.remap(sizes, self.itemsize, |i| (f(i), 0))
    }
}

/// One random op: a code and four random numbers turned into arguments valid for the
/// current shape (or skipped when the op cannot apply).
#[derive(Clone, Debug)]
struct Step(u8, [u64; 4]);

fn pick(r: u64, n: i64) -> i64 {
    (r % n.max(1) as u64) as i64
}

/// A dim in [-D, D-1] (either spelling), or 0 / -1 for a 0-dim tensor.
fn rdim(r: u64, ndim: usize) -> i64 {
    let n = ndim.max(1) as i64;
    let d = pick(r >> 1, n);
    if r & 1 == 1 {
        d - n
    } else {
        d
    }
}

const MAX_NUMEL: i64 = 1500;

/// Applies `step` to (`t`, `m`); `None` when skipped or when the op legitimately refuses
/// (view on strides that cannot express the shape, view_dtype divisibility).
fn apply(t: &Tensor, m: &Model, step: &Step) -> Option<(Tensor, Model, String)> {
    let Step(code, r) = step;
    let n = m.sizes.clone();
    let nd = n.len();
    let desc;
    let (t2, m2) = match code % 17 {
        0 => {
            let (a, b) = (rdim(r[0], nd), rdim(r[1], nd));
            desc = format!("transpose({a}, {b})");
            let (wa, wb) = (w(a, nd), w(b, nd));
            let mut s = n.clone();
            if nd > 0 {
                s.swap(wa, wb);
            }
            let m2 = m.same(s, |i| {
                let mut o = i.to_vec();
                if nd > 0 {
                    o.swap(wa, wb);
                }
                o
            });
            (t.transpose(a, b).unwrap(), m2)
        }
        1 => {
            // a random permutation, each dim spelled positive or negative
            let mut perm: Vec<usize> = (0..nd).collect();
            let mut x = r[0];
            for i in (1..nd).rev() {
                perm.swap(i, (x % (i as u64 + 1)) as usize);
                x /= i as u64 + 1;
            }
            let dims: Vec<i64> = perm
                .iter()
                .enumerate()
                .map(|(k, &p)| {
                    if (r[1] >> k) & 1 == 1 {
                        p as i64 - nd as i64
                    } else {
                        p as i64
                    }
                })
                .collect();
            desc = format!("permute({dims:?})");
            let s = perm.iter().map(|&p| n[p]).collect();
            let m2 = m.same(s, |i| {
                let mut o = vec![0; nd];
                for (k, &p) in perm.iter().enumerate() {
                    o[p] = i[k];
                }
                o
            });
            (t.permute(&dims).unwrap(), m2)
        }
        2 => {
            let (a, b) = (rdim(r[0], nd), rdim(r[1], nd));
            desc = format!("movedim({a}, {b})");
            let (src, dst) = (w(a, nd), w(b, nd));
            // order[k] = the old dim at new position k
            let mut order: Vec<usize> = (0..nd).filter(|&k| k != src).collect();
            if nd > 0 {
                order.insert(dst, src);
            }
            let s = order.iter().map(|&p| n[p]).collect();
            let m2 = m.same(s, |i| {
                let mut o = vec![0; nd];
                for (k, &p) in order.iter().enumerate() {
                    o[p] = i[k];
                }
                o
            });
            (t.movedim(a, b).unwrap(), m2)
        }
        3 => {
            if nd == 0 {
                return None;
            }
            let d = rdim(r[0], nd);
            let wd = w(d, nd);
            let len = n[wd];
            let start = pick(r[1], 2 * len + 5) - len - 2;
            let end = if r[2] % 5 == 0 {
                i64::MAX
            } else {
                pick(r[2], 2 * len + 5) - len - 2
            };
            let step = 1 + pick(r[3], 3);
            desc = format!("slice({d}, {start}, {end}, {step})");
            // Python: the indices of range(len)[start:end:step]
            let norm = |v: i64| if v < 0 { (v + len).max(0) } else { v.min(len) };
            let (s0, e0) = (norm(start), norm(end));
            let picked: Vec<i64> = (0..len)
                .filter(|&k| k >= s0 && k < e0 && (k - s0) % step == 0)
                .collect();
            let mut s = n.clone();
            s[wd] = picked.len() as i64;
            let m2 = m.same(s, |i| {
                let mut o = i.to_vec();
                o[wd] = picked[i[wd] as usize];
                o
            });
            (t.slice(d, start, end, step).unwrap(), m2)
        }
        4 => {
            if nd == 0 {
                return None;
            }
            let d = rdim(r[0], nd);
            let wd = w(d, nd);
            let len = n[wd];
            let start = pick(r[1], len + 1);
            let length = pick(r[2], len - start + 1);
            let spelled = if r[3] & 1 == 1 && start < len {
                start - len
            } else {
                start
            };
            desc = format!("narrow({d}, {spelled}, {length})");
            let mut s = n.clone();
            s[wd] = length;
            let m2 = m.same(s, |i| {
                let mut o = i.to_vec();
                o[wd] += start;
                o
            });
            (t.narrow(d, spelled, length).unwrap(), m2)
        }
        5 => {
            if nd == 0 {
                return None;
            }
            let d = rdim(r[0], nd);
            let wd = w(d, nd);
            if n[wd] == 0 {
                return None;
            }
            let k = pick(r[1], n[wd]);
            let spelled = if r[2] & 1 == 1 { k - n[wd] } else { k };
            desc = format!("select({d}, {spelled})");
            let mut s = n.clone();
            s.remove(wd);
            let m2 = m.same(s, |i| {
                let mut o = i.to_vec();
                o.insert(wd, k);
                o
            });
            (t.select(d, spelled).unwrap(), m2)
        }
        6 => {
            desc = "squeeze()".into();
            let keep: Vec<usize> = (0..nd).filter(|&k| n[k] != 1).collect();
            let s = keep.iter().map(|&k| n[k]).collect();
            let m2 = m.same(s, |i| {
                let mut o = vec![0; nd];
                for (j, &k) in keep.iter().enumerate() {
                    o[k] = i[j];
                }
                o
            });
            (t.squeeze().unwrap(), m2)
        }
        7 => {
            let d = rdim(r[0], nd);
            desc = format!("squeeze_dim({d})");
            let wd = w(d, nd);
            let m2 = if nd > 0 && n[wd] == 1 {
                let mut s = n.clone();
                s.remove(wd);
                m.same(s, |i| {
                    let mut o = i.to_vec();
                    o.insert(wd, 0);
                    o
                })
            } else {
                m.clone()
            };
            (t.squeeze_dim(d).unwrap(), m2)
        }
        8 => {
            if nd >= 6 {
                return None;
            }
            let d = rdim(r[0], nd + 1);
            desc = format!("unsqueeze({d})");
            let wd = w(d, nd + 1);
            let mut s = n.clone();
            s.insert(wd, 1);
            let m2 = m.same(s, |i| {
                let mut o = i.to_vec();
                o.remove(wd);
                o
            });
            (t.unsqueeze(d).unwrap(), m2)
        }
        9 => {
            let lead = pick(r[0], 3) as usize;
            if nd + lead > 6 {
                return None;
            }
            let mut target: Vec<i64> = (0..lead).map(|k| 1 + pick(r[1] >> (4 * k), 3)).collect();
            for (k, &size) in n.iter().enumerate() {
                let x = r[2] >> (3 * k);
                target.push(match (size, x % 3) {
                    (_, 0) => -1,
                    (1, _) => pick(x >> 2, 4),
                    _ => size,
                });
            }
            let resolved: Vec<i64> = target
                .iter()
                .enumerate()
                .map(|(k, &v)| if v == -1 { n[k - lead] } else { v })
                .collect();
            if resolved.iter().product::<i64>() > MAX_NUMEL {
                return None;
            }
            desc = format!("expand({target:?})");
            let m2 = m.same(resolved.clone(), |i| {
                (0..nd)
                    .map(|k| if n[k] == 1 { 0 } else { i[k + lead] })
                    .collect()
            });
            (t.expand(&target).unwrap(), m2)
        }
        10 => {
            if nd == 0 {
                return None;
            }
            let d = rdim(r[0], nd);
            let wd = w(d, nd);
            let len = n[wd];
            let divisors: Vec<i64> = (1..=len.max(1))
                .filter(|&f| len == 0 || len % f == 0)
                .collect();
            let f = divisors[pick(r[1], divisors.len() as i64) as usize];
            let (a, b) = if len == 0 { (f, 0) } else { (f, len / f) };
            let sizes = match r[2] % 3 {
                0 if len > 0 => vec![-1, b],
                1 if len > 0 => vec![a, -1],
                _ => vec![a, b],
            };
            desc = format!("unflatten({d}, {sizes:?})");
            let mut s = n.clone();
            s.splice(wd..=wd, [a, b]);
            let m2 = m.same(s, |i| {
                let mut o: Vec<i64> = i.to_vec();
                let merged = o[wd] * b + o[wd + 1];
                o.splice(wd..=wd + 1, [merged]);
                o
            });
            (t.unflatten(d, &sizes).unwrap(), m2)
        }
        11 => {
            if nd < 2 {
                return None;
            }
            let d1 = rdim(r[0], nd);
            let mut d2 = rdim(r[1], nd);
            if w(d1, nd) == w(d2, nd) {
                d2 = (w(d1, nd) as i64 + 1) % nd as i64;
            }
            let (a, b) = (w(d1, nd), w(d2, nd));
            let off = pick(r[2], 9) - 4;
            desc = format!("diagonal({off}, {d1}, {d2})");
            let (ra, rb) = if off >= 0 { (0, off) } else { (-off, 0) };
            let len = (0..)
                .take_while(|&k| k + ra < n[a] && k + rb < n[b])
                .count() as i64;
            let rest: Vec<usize> = (0..nd).filter(|&k| k != a && k != b).collect();
            let mut s: Vec<i64> = rest.iter().map(|&k| n[k]).collect();
            s.push(len);
            let m2 = m.same(s, |i| {
                let mut o = vec![0; nd];
                for (j, &k) in rest.iter().enumerate() {
                    o[k] = i[j];
                }
                let kk = i[i.len() - 1];
                o[a] = kk + ra;
                o[b] = kk + rb;
                o
            });
            (t.diagonal(off, d1, d2).unwrap(), m2)
        }
        12 => {
            if nd >= 6 {
                return None;
            }
            let d = rdim(r[0], nd);
            let wd = w(d, nd);
            let len = if nd == 0 { 1 } else { n[wd] };
            let size = pick(r[1], len + 1);
            let step = 1 + pick(r[2], 3);
            desc = format!("unfold({d}, {size}, {step})");
            let windows = (len - size) / step + 1;
            let m2 = if nd == 0 {
                m.same(vec![size], |_| vec![])
            } else {
                let mut s = n.clone();
                s[wd] = windows;
                s.push(size);
                if s.iter().product::<i64>() > MAX_NUMEL {
                    return None;
                }
                m.same(s, |i| {
                    let mut o = i[..nd].to_vec();
                    o[wd] = i[wd] * step + i[nd];
                    o
                })
            };
            (t.unfold(d, size, step).unwrap(), m2)
        }
        13 => {
            // a random shape with the same numel: a split of the row-major order
            let numel: i64 = n.iter().product();
            let mut s = Vec::new();
            let mut rest = numel;
            let mut x = r[0];
            while rest > 1 && s.len() < 4 {
                let divisors: Vec<i64> = (2..=rest).filter(|&f| rest % f == 0).collect();
                let f = divisors[(x % divisors.len() as u64) as usize];
                x /= divisors.len() as u64 + 1;
                s.push(f);
                rest /= f;
            }
            if rest != 1 || numel == 0 {
                s.push(rest);
            }
            if r[1] % 3 == 0 {
                s.insert(pick(r[2], s.len() as i64 + 1) as usize, 1);
            }
            let mut spelled = s.clone();
            if r[3] % 2 == 0 && !s.is_empty() && numel > 0 {
                let k = pick(r[3] >> 1, s.len() as i64) as usize;
                spelled[k] = -1;
            }
            desc = format!("view({spelled:?})");
            let old = n.clone();
            let m2 = m.same(s.clone(), |i| {
                let p = flat(&s, i) as i64;
                let mut o = vec![0; old.len()];
                let mut q = p;
                for k in (0..old.len()).rev() {
                    o[k] = q % old[k];
                    q /= old[k];
                }
                o
            });
            match t.try_view(&spelled).unwrap() {
                Some(v) => (v, m2),
                None => {
                    assert!(
                        !t.is_contiguous(MemoryFormat::Contiguous),
                        "view of a contiguous tensor must succeed: {desc}"
                    );
                    return None;
                }
            }
        }
        14 => {
            let to = [DType::I64, DType::I32, DType::I16, DType::U8][pick(r[0], 4) as usize];
            desc = format!("view_dtype({to:?})");
            let (a, b) = (m.itemsize, to.itemsize() as i64);
            let v = match t.view_dtype(to) {
                Ok(v) => v,
                Err(e) => {
                    assert!(a != b, "same itemsize never fails: {}", e.message);
                    return None;
                }
            };
            let m2 = if a == b {
                m.remap(n.clone(), b, |i| (i.to_vec(), 0))
            } else if a > b {
                let q = a / b;
                let mut s = n.clone();
                *s.last_mut().unwrap() *= q;
                m.remap(s, b, |i| {
                    let mut o = i.to_vec();
                    let l = o.len() - 1;
                    let part = o[l] % q;
                    o[l] /= q;
                    (o, part * b)
                })
            } else {
                let q = b / a;
                let mut s = n.clone();
                *s.last_mut().unwrap() /= q;
                m.remap(s, b, |i| {
                    let mut o = i.to_vec();
                    let l = o.len() - 1;
                    o[l] *= q;
                    (o, 0)
                })
            };
            (v, m2)
        }
        15 => {
            desc = if r[0] % 2 == 0 { "alias()" } else { "detach()" }.into();
            let v = if r[0] % 2 == 0 {
                t.alias().unwrap()
            } else {
                t.detach().unwrap()
            };
            (v, m.clone())
        }
        _ => {
            if nd > 2 {
                return None;
            }
            desc = "t()".into();
            let mut s = n.clone();
            s.reverse();
            let m2 = m.same(s, |i| i.iter().rev().copied().collect());
            (t.transpose_2d().unwrap(), m2)
        }
    };
    Some((t2, m2, desc))
}

/// The properties of one view against its model and base.
fn check(v: &Tensor, m: &Model, base: &Tensor, storage: &mut [i64], chain: &str, wr: u64) {
    assert_eq!(v.sizes(), &m.sizes[..], "sizes after {chain}");
    assert_eq!(v.itemsize() as i64, m.itemsize, "{chain}");
    assert!(v.shares_storage(base), "{chain}");
    let extent =
        shape::storage_nbytes_needed(v.sizes(), v.strides(), v.storage_offset(), v.itemsize())
            .unwrap();
    assert!(
        extent as usize <= base.storage().nbytes(),
        "{chain}: outside its storage"
    );
    for (k, idx) in indices(&m.sizes).iter().enumerate() {
        let off = shape::element_offset(v.sizes(), v.strides(), v.storage_offset(), idx).unwrap();
        assert_eq!(off * m.itemsize, m.offs[k], "{chain}: element {idx:?}");
        if m.itemsize == 8 {
            let got = v.get(idx).unwrap().to_i64();
            assert_eq!(
                got,
                storage[(m.offs[k] / 8) as usize],
                "{chain}: value at {idx:?}"
            );
        }
    }
    // a write through the view lands in the base and bumps the shared counter
    if m.itemsize == 8 && !m.offs.is_empty() {
        let k = (wr % m.offs.len() as u64) as usize;
        let idx = &indices(&m.sizes)[k];
        let before = base.version();
        let value = -1 - (wr % 1000) as i64;
        v.set(idx, Scalar::Int(value)).unwrap();
        storage[(m.offs[k] / 8) as usize] = value;
        assert_eq!(base.version(), before + 1, "{chain}");
        assert_eq!(v.version(), base.version(), "{chain}");
        let flat_base = base.as_strided(&[storage.len() as i64], &[1], 0).unwrap();
        assert_eq!(
            flat_base.get(&[m.offs[k] / 8]).unwrap().to_i64(),
            value,
            "{chain}"
        );
    }
}

fn base_strategy() -> impl Strategy<Value = (Vec<i64>, Vec<usize>, Vec<i64>, i64)> {
    (0usize..=4).prop_flat_map(|nd| {
        (
            prop::collection::vec(prop_oneof![1 => Just(0i64), 8 => 1i64..=4], nd),
            Just((0..nd).collect::<Vec<usize>>()).prop_shuffle(),
            prop::collection::vec(1i64..=2, nd),
            0i64..=3,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn random_view_chains_match_the_reference_model(
        (sizes, order, gaps, offset) in base_strategy(),
        steps in prop::collection::vec((0u8..17, any::<[u64; 4]>()), 1..10),
        writes in any::<u64>(),
    ) {
        // strides: innermost dim first in `order`, each dim's span times its gap
        let nd = sizes.len();
        let mut strides = vec![0i64; nd];
        let mut acc = 1i64;
        for &d in order.iter().rev() {
            strides[d] = acc * gaps[d];
            acc = strides[d] * sizes[d].max(1);
        }
        let total = offset + acc + 3;
        let storage_t = Tensor::arange(total, DType::I64).unwrap();
        let mut storage: Vec<i64> = (0..total).collect();
        let base = storage_t.as_strided(&sizes, &strides, offset).unwrap();
        let base_model = Model { sizes: sizes.clone(), offs: vec![], itemsize: 8 };
        let offs = indices(&sizes)
            .iter()
            .map(|i| 8 * (offset + i.iter().zip(&strides).map(|(a, b)| a * b).sum::<i64>()))
            .collect();
        let mut m = Model { offs, ..base_model };
        let mut t = base.alias().unwrap();
        let mut chain = format!("base {sizes:?} strides {strides:?} offset {offset}");
        check(&t, &m, &storage_t, &mut storage, &chain, writes);
        for (k, (code, r)) in steps.iter().enumerate() {
            if let Some((t2, m2, desc)) = apply(&t, &m, &Step(*code, *r)) {
                chain.push_str(" -> ");
                chain.push_str(&desc);
                check(&t2, &m2, &storage_t, &mut storage, &chain, writes.rotate_left(7 * k as u32));
                t = t2;
                m = m2;
            }
        }
    }
}
