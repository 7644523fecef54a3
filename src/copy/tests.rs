//! Every op against a naive element-by-element reference (`get`/`set` with index
//! enumeration), plus the PyTorch rules the ops must follow.

use super::reference_values;
use crate::device::Device;
use crate::dtype::{DType, Scalar};
use crate::error::Status;
use crate::shape;
use crate::tensor_impl::{MemoryFormat, Tensor, TensorImpl};
use proptest::prelude::*;

/// A 1-D base of `len` elements of `dtype` holding `i·0.75 - 5` (converted by dtype.rs).
fn base(len: i64, dtype: DType) -> Tensor {
    let t = Tensor::empty(&[len], dtype).unwrap();
    for i in 0..len {
        t.set(&[i], Scalar::Float(i as f64 * 0.75 - 5.0)).unwrap();
    }
    t
}

/// All indices of `sizes` in row-major order.
fn indices(sizes: &[i64]) -> Vec<Vec<i64>> {
    let mut out = Vec::new();
    if sizes.contains(&0) {
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

/// The value `src` broadcast to `sizes` has at `idx` (reference broadcasting).
fn broadcast_get(src: &TensorImpl, idx: &[i64]) -> Scalar {
    let lead = idx.len() - src.ndim();
    let i: Vec<i64> = (0..src.ndim())
        .map(|d| {
            if src.sizes()[d] == 1 {
                0
            } else {
                idx[lead + d]
            }
        })
        .collect();
    src.get(&i).unwrap()
}

/// What `dst.copy_(src)` must produce, element by element through `set` (dtype.rs's
/// conversion of each source value), on a private copy of dst's values.
fn reference_copy(dst: &TensorImpl, src: &TensorImpl) -> Vec<Scalar> {
    let probe = Tensor::empty(&[1], dst.dtype()).unwrap();
    indices(dst.sizes())
        .iter()
        .map(|idx| {
            probe.set(&[0], broadcast_get(src, idx)).unwrap();
            probe.get(&[0]).unwrap()
        })
        .collect()
}

/// Scalars compared with NaN equal to NaN (bit-level reference comparison).
fn same(a: &[Scalar], b: &[Scalar]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Scalar::Float(p), Scalar::Float(q)) => p == q || (p.is_nan() && q.is_nan()),
            (Scalar::Complex(p, r), Scalar::Complex(q, s)) => {
                (p == q || (p.is_nan() && q.is_nan())) && (r == s || (r.is_nan() && s.is_nan()))
            }
            _ => x == y,
        })
}

/// Every dtype with values (all but float4_e2m1fn_x2, tested on its own below).
fn valued() -> impl Iterator<Item = DType> {
    DType::ALL.into_iter().filter(|d| d.has_values())
}

#[test]
fn copy_every_dtype_pair_strided_and_contiguous() {
    for s in valued() {
        for d in valued() {
            // transposed source [3, 4] over a [4, 3] base; contiguous destination
            let b = base(12, s);
            let src = b.make_view(&[3, 4], &[1, 3], 0).unwrap();
            let dst = Tensor::zeros(&[3, 4], d).unwrap();
            dst.copy_(&src).unwrap();
            assert!(
                same(&reference_values(&dst), &reference_copy(&dst, &src)),
                "{s:?} -> {d:?}"
            );
            assert_eq!(dst.version(), 1);
            // contiguous source of 100 elements (vector paths), strided destination
            let src = base(100, s);
            let db = Tensor::zeros(&[200], d).unwrap();
            let dst = db.make_view(&[100], &[2], 1).unwrap();
            dst.copy_(&src).unwrap();
            assert!(
                same(&reference_values(&dst), &reference_copy(&dst, &src)),
                "{s:?} -> {d:?}"
            );
            // contiguous to contiguous
            let dst = Tensor::zeros(&[100], d).unwrap();
            dst.copy_(&src).unwrap();
            assert!(
                same(&reference_values(&dst), &reference_copy(&dst, &src)),
                "{s:?} -> {d:?}"
            );
        }
    }
}

#[test]
fn conversion_rules_follow_dtype_rs() {
    let f = Tensor::empty(&[8], DType::F32).unwrap();
    let vals = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        3.9,
        -3.9,
        300.0,
        -1.0,
        1e20,
    ];
    for (i, v) in vals.iter().enumerate() {
        f.set(&[i as i64], Scalar::Float(*v)).unwrap();
    }
    let i32s = f.to_dtype(DType::I32).unwrap();
    let got: Vec<i64> = reference_values(&i32s).iter().map(|s| s.to_i64()).collect();
    // Rust `as`: NaN -> 0, saturating (docs/shape-rules.md; PyTorch's C++ casts are UB there).
    assert_eq!(
        got,
        vec![
            0,
            i32::MAX as i64,
            i32::MIN as i64,
            3,
            -3,
            300,
            -1,
            i32::MAX as i64
        ]
    );
    let u8s = f.to_dtype(DType::U8).unwrap();
    let got: Vec<i64> = reference_values(&u8s).iter().map(|s| s.to_i64()).collect();
    assert_eq!(got, vec![0, 255, 0, 3, 0, 255, 0, 255]);
    let bools = f.to_dtype(DType::Bool).unwrap();
    assert!(reference_values(&bools)
        .iter()
        .all(|s| *s == Scalar::Bool(true)));
    let c = Tensor::full(&[2], DType::C64, Scalar::Complex(1.5, 2.0)).unwrap();
    let r = c.to_dtype(DType::F64).unwrap();
    assert_eq!(r.get(&[1]).unwrap(), Scalar::Float(1.5));
    let z = Tensor::full(&[2], DType::C64, Scalar::Complex(0.0, 2.0)).unwrap();
    assert_eq!(
        z.to_dtype(DType::Bool).unwrap().get(&[0]).unwrap(),
        Scalar::Bool(true)
    );
}

#[test]
fn to_dtype_same_handle_and_preserved_strides() {
    let t = base(6, DType::F32);
    assert!(t.to_dtype(DType::F32).unwrap().is_same(&t));
    let tr = t.make_view(&[3, 2], &[1, 3], 0).unwrap();
    let d = tr.to_dtype(DType::F64).unwrap();
    assert_eq!(d.strides(), &[1, 3]); // torch: x.t().to(float64).stride() == (1, 3)
    assert!(!d.shares_storage(&t));
    assert!(same(&reference_values(&d), &reference_copy(&d, &tr)));
    assert_eq!(t.version(), 6); // only the 6 sets of `base`
}

#[test]
fn contiguous_formats() {
    let t = base(120, DType::F32).view(&[2, 3, 4, 5]).unwrap();
    let same_t = t.contiguous(MemoryFormat::Contiguous).unwrap();
    assert!(same_t.is_same(&t));
    let cl = t.contiguous(MemoryFormat::ChannelsLast).unwrap();
    assert_eq!(cl.strides(), &[60, 1, 15, 3]);
    assert!(same(&reference_values(&cl), &reference_values(&t)));
    assert!(cl
        .contiguous(MemoryFormat::ChannelsLast)
        .unwrap()
        .is_same(&cl));
    let back = cl.contiguous(MemoryFormat::Contiguous).unwrap();
    assert_eq!(back.strides(), &[60, 20, 5, 1]);
    assert!(back.equal(&t).unwrap());
    let e = t.contiguous(MemoryFormat::Preserve).err().unwrap();
    assert_eq!(e.status, Status::InvalidArgument);
    assert_eq!(
        e.message,
        "preserve memory format is unsupported by the contiguous operator"
    );
    let e = t.contiguous(MemoryFormat::ChannelsLast3d).err().unwrap();
    assert_eq!(e.status, Status::InvalidArgument);
    let t5 = base(720, DType::I16).view(&[2, 3, 4, 5, 6]).unwrap();
    let c3 = t5.contiguous(MemoryFormat::ChannelsLast3d).unwrap();
    assert_eq!(c3.strides(), &[360, 1, 90, 18, 3]);
    assert!(same(&reference_values(&c3), &reference_values(&t5)));
    assert_eq!(t.version(), 120);
}

#[test]
fn blocked_transposes_with_ragged_edges() {
    // Sizes that are not multiples of the tile; every itemsize; and a converting transpose.
    for dt in [DType::U8, DType::I16, DType::F32, DType::F64, DType::C128] {
        for (r, c) in [(70i64, 45i64), (1, 100), (33, 2), (3, 200)] {
            let b = base(r * c, dt);
            let tr = b.make_view(&[c, r], &[1, c], 0).unwrap();
            let out = tr.contiguous(MemoryFormat::Contiguous).unwrap();
            assert!(
                same(&reference_values(&out), &reference_values(&tr)),
                "{dt:?} {r}x{c}"
            );
            let f = Tensor::zeros(&[c, r], DType::F64).unwrap();
            f.copy_(&tr).unwrap();
            assert!(
                same(&reference_values(&f), &reference_copy(&f, &tr)),
                "{dt:?} {r}x{c}"
            );
        }
    }
    // NCHW -> NHWC with 3 and 40 channels
    for c in [3i64, 40] {
        let t = base(2 * c * 9 * 7, DType::F32).view(&[2, c, 9, 7]).unwrap();
        let cl = t.contiguous(MemoryFormat::ChannelsLast).unwrap();
        assert!(same(&reference_values(&cl), &reference_values(&t)), "C={c}");
    }
}

#[test]
fn clone_and_empty_like_layouts() {
    let b = base(120, DType::F32);
    // dense permutation: exact strides kept
    let p = b.make_view(&[2, 4, 5, 3], &[60, 15, 3, 1], 0).unwrap(); // NHWC-permuted view
    let c = p.deep_clone(MemoryFormat::Preserve).unwrap();
    assert_eq!(c.strides(), p.strides());
    assert!(!c.shares_storage(&p));
    assert!(same(&reference_values(&c), &reference_values(&p)));
    assert_eq!(
        p.empty_like(MemoryFormat::Preserve).unwrap().strides(),
        p.strides()
    );
    // not dense: dense strides in the same dim order (torch: (1, 24, 8))
    let q = Tensor::zeros(&[400], DType::F32)
        .unwrap()
        .make_view(&[8, 4, 3], &[1, 48, 16], 0)
        .unwrap();
    assert_eq!(
        q.deep_clone(MemoryFormat::Preserve).unwrap().strides(),
        &[1, 24, 8]
    );
    assert_eq!(
        q.empty_like(MemoryFormat::Preserve).unwrap().strides(),
        &[1, 24, 8]
    );
    // expanded
    let e = b.make_view(&[3, 4], &[1, 0], 0).unwrap();
    let ce = e.deep_clone(MemoryFormat::Preserve).unwrap();
    assert_eq!(ce.strides(), &[4, 1]);
    assert!(same(&reference_values(&ce), &reference_values(&e)));
    // explicit formats
    let t4 = b.view(&[2, 3, 4, 5]).unwrap();
    assert_eq!(
        t4.deep_clone(MemoryFormat::ChannelsLast).unwrap().strides(),
        &[60, 1, 15, 3]
    );
    assert_eq!(
        t4.empty_like(MemoryFormat::Contiguous).unwrap().strides(),
        &[60, 20, 5, 1]
    );
    let e = b.deep_clone(MemoryFormat::ChannelsLast).err().unwrap();
    assert_eq!(
        e.message,
        "required rank 4 tensor to use channels_last format (got 1 dims)"
    );
    // 0-dim and size 0
    let s = Tensor::full(&[], DType::I64, Scalar::Int(7)).unwrap();
    let cs = s.deep_clone(MemoryFormat::Preserve).unwrap();
    assert_eq!(cs.get(&[]).unwrap(), Scalar::Int(7));
    let z = Tensor::empty(&[0, 3], DType::F32).unwrap();
    assert_eq!(
        z.deep_clone(MemoryFormat::Preserve).unwrap().sizes(),
        &[0, 3]
    );
}

#[test]
fn copy_broadcasts_and_refuses_bad_shapes() {
    let dst = Tensor::zeros(&[2, 3], DType::F32).unwrap();
    let row = base(3, DType::I32);
    dst.copy_(&row).unwrap();
    assert!(same(&reference_values(&dst), &reference_copy(&dst, &row)));
    let col = base(2, DType::F64).view(&[2, 1]).unwrap();
    dst.copy_(&col).unwrap();
    assert!(same(&reference_values(&dst), &reference_copy(&dst, &col)));
    let s = Tensor::full(&[], DType::F32, Scalar::Float(2.5)).unwrap();
    dst.copy_(&s).unwrap();
    assert!(reference_values(&dst)
        .iter()
        .all(|v| *v == Scalar::Float(2.5)));
    assert_eq!(dst.version(), 3);
    let e = Tensor::zeros(&[3], DType::F32)
        .unwrap()
        .copy_(&dst)
        .err()
        .unwrap();
    assert_eq!(e.status, Status::Shape);
    assert_eq!(
        e.message,
        "output with shape [3] doesn't match the broadcast shape [2, 3]"
    );
    let e = dst.copy_(&base(4, DType::F32)).err().unwrap();
    assert_eq!(e.status, Status::Shape);
    assert_eq!(dst.version(), 3, "a failed copy_ does not bump");
}

/// Two storages over the same bytes (two from_blob wraps of one buffer, as a DLPack round
/// trip gives): overlap is decided from the addresses, not the storage identity, so
/// `p.copy_(alias_of_p.T)` is the transpose of the snapshot.
#[test]
fn copy_between_storages_over_the_same_bytes_uses_a_snapshot() {
    let mut buf: Vec<f64> = (0..16).map(|i| i as f64).collect();
    let wrap = |buf: &mut Vec<f64>| {
        let blob = crate::storage::Blob::borrowed(buf.as_mut_ptr() as *mut std::ffi::c_void);
        Tensor::from_blob(
            blob,
            &[4, 4],
            crate::layout::Strides::Contiguous,
            DType::F64,
        )
        .unwrap()
    };
    let p = wrap(&mut buf);
    let alias = wrap(&mut buf);
    assert!(!p.shares_storage(&alias));
    p.copy_(&alias.transpose(0, 1).unwrap()).unwrap();
    for i in 0..4 {
        for j in 0..4 {
            assert_eq!(p.get(&[i, j]).unwrap().to_f64(), (j * 4 + i) as f64);
        }
    }
    // Shifted by one element, and disjoint halves (the direct path) of one buffer.
    let p = wrap(&mut buf);
    let alias = wrap(&mut buf);
    let before: Vec<f64> = (0..15)
        .map(|i| p.get(&[i / 4, i % 4]).unwrap().to_f64())
        .collect();
    let flat_p = p.view(&[16]).unwrap();
    let flat_a = alias.view(&[16]).unwrap();
    flat_p
        .narrow(0, 1, 15)
        .unwrap()
        .copy_(&flat_a.narrow(0, 0, 15).unwrap())
        .unwrap();
    for (i, b) in before.iter().enumerate() {
        assert_eq!(flat_p.get(&[i as i64 + 1]).unwrap().to_f64(), *b);
    }
    flat_p
        .narrow(0, 0, 8)
        .unwrap()
        .copy_(&flat_a.narrow(0, 8, 8).unwrap())
        .unwrap();
    for i in 0..8 {
        assert_eq!(
            flat_p.get(&[i]).unwrap().to_f64(),
            flat_p.get(&[i + 8]).unwrap().to_f64()
        );
    }
    drop((p, alias, flat_p, flat_a));
    drop(buf);
}

#[test]
fn copy_with_overlapping_source_uses_a_snapshot() {
    for (dst_off, src_off) in [(2i64, 0i64), (0, 2)] {
        let a = base(10, DType::F32);
        let expect_src: Vec<Scalar> = (0..6).map(|i| a.get(&[src_off + i]).unwrap()).collect();
        let dst = a.make_view(&[6], &[1], dst_off).unwrap();
        let src = a.make_view(&[6], &[1], src_off).unwrap();
        dst.copy_(&src).unwrap();
        assert!(
            same(&reference_values(&dst), &expect_src),
            "{dst_off} <- {src_off}"
        );
    }
    // in-place transpose of a square matrix, and a converting overlapping copy
    let a = base(16, DType::I64).view(&[4, 4]).unwrap();
    let before = reference_values(&a.make_view(&[4, 4], &[1, 4], 0).unwrap());
    a.copy_(&a.make_view(&[4, 4], &[1, 4], 0).unwrap()).unwrap();
    assert!(same(&reference_values(&a), &before));
    let raw = base(8, DType::I32);
    let lo = raw.make_view_dtype(&[4], &[1], 0, DType::I32).unwrap();
    let as_i16 = raw.make_view_dtype(&[4], &[1], 1, DType::I16).unwrap(); // bytes 2..10
    let snapshot: Vec<Scalar> = reference_values(&as_i16);
    let probe = Tensor::empty(&[4], DType::I32).unwrap();
    for (i, v) in snapshot.iter().enumerate() {
        probe.set(&[i as i64], *v).unwrap();
    }
    lo.copy_(&as_i16).unwrap();
    assert!(same(&reference_values(&lo), &reference_values(&probe)));
    // copying a tensor onto itself changes nothing but the version
    let t = base(5, DType::F32);
    let v0 = t.version();
    let vals = reference_values(&t);
    t.copy_(&t).unwrap();
    assert!(same(&reference_values(&t), &vals));
    assert_eq!(t.version(), v0 + 1);
}

#[test]
fn in_place_errors() {
    let t = Tensor::zeros(&[3], DType::F32).unwrap();
    let expanded = t.make_view(&[2, 3], &[0, 1], 0).unwrap();
    let src = Tensor::zeros(&[2, 3], DType::F32).unwrap();
    assert_eq!(expanded.copy_(&src).err().unwrap().status, Status::Overlap);
    // fill_ of an aliasing destination is allowed (PyTorch: filling is idempotent)
    expanded.fill_(Scalar::Int(1)).unwrap();
    assert_eq!(t.version(), 1);
    assert_eq!(t.get(&[2]).unwrap().to_f64(), 1.0);
    assert_eq!(expanded.get(&[1, 0]).unwrap().to_f64(), 1.0);
    // reading from an expanded source is fine
    src.copy_(&expanded).unwrap();
    let ro = Tensor::zeros(&[3], DType::F32).unwrap();
    ro.storage().mark_read_only();
    assert_eq!(ro.copy_(&t).err().unwrap().status, Status::ReadOnly);
    assert_eq!(
        ro.fill_(Scalar::Int(1)).err().unwrap().status,
        Status::ReadOnly
    );
    assert_eq!(ro.version(), 0);
    // reading a read-only tensor is allowed
    t.copy_(&ro).unwrap();
    let cuda = Device {
        device_type: 2,
        device_id: 0,
    };
    let blob = crate::storage::Blob {
        device: cuda,
        ..crate::storage::Blob::borrowed(0x1000 as *mut _)
    };
    let dev =
        Tensor::from_blob(blob, &[3], crate::layout::Strides::Contiguous, DType::F32).unwrap();
    assert_eq!(dev.copy_(&t).err().unwrap().status, Status::Device);
    assert_eq!(t.copy_(&dev).err().unwrap().status, Status::Device);
    assert_eq!(
        dev.fill_(Scalar::Int(0)).err().unwrap().status,
        Status::Device
    );
    assert_eq!(
        dev.deep_clone(MemoryFormat::Preserve).err().unwrap().status,
        Status::Device
    );
    assert_eq!(
        dev.to_dtype(DType::F64).err().unwrap().status,
        Status::Device
    );
    assert_eq!(dev.equal(&t).err().unwrap().status, Status::Device);
    assert_eq!(dev.repeat(&[2]).err().unwrap().status, Status::Device);
    // metadata-only paths still work on a device tensor
    assert!(dev
        .contiguous(MemoryFormat::Contiguous)
        .unwrap()
        .is_same(&dev));
    assert!(dev.reshape(&[3, 1]).is_ok());
}

#[test]
fn fill_every_dtype_and_layout() {
    for d in valued() {
        let b = Tensor::zeros(&[24], d).unwrap();
        let v = b.make_view(&[3, 4], &[1, 6], 1).unwrap();
        v.fill_(Scalar::Float(-2.5)).unwrap();
        let probe = Tensor::empty(&[1], d).unwrap();
        probe.set(&[0], Scalar::Float(-2.5)).unwrap();
        let want = probe.get(&[0]).unwrap();
        assert!(
            reference_values(&v).iter().all(|x| same(&[*x], &[want])),
            "{d:?}"
        );
        // untouched elsewhere
        let zero = Tensor::zeros(&[1], d).unwrap().get(&[0]).unwrap();
        assert_eq!(b.get(&[0]).unwrap(), zero);
        assert_eq!(b.version(), 1);
        let big = Tensor::zeros(&[1000], d).unwrap();
        big.fill_(Scalar::Int(1)).unwrap();
        let one = {
            probe.set(&[0], Scalar::Int(1)).unwrap();
            probe.get(&[0]).unwrap()
        };
        assert!(reference_values(&big).iter().all(|x| *x == one), "{d:?}");
    }
    let s = Tensor::zeros(&[], DType::I8).unwrap();
    s.fill_(Scalar::Int(-3)).unwrap();
    assert_eq!(s.get(&[]).unwrap(), Scalar::Int(-3));
    let z = Tensor::zeros(&[0], DType::I8).unwrap();
    z.fill_(Scalar::Int(1)).unwrap();
    assert_eq!(z.version(), 1);
}

/// Edge cases the PyTorch conformance run (conformance/conformance.py) found; each pins
/// what torch 2.15 does.
#[test]
fn write_checks_in_torch_order() {
    let src = Tensor::zeros(&[2, 3], DType::F32).unwrap();
    // `torch.empty(0, 1).expand(0, 3).copy_(torch.zeros(3))` succeeds: a tensor without
    // elements is non-overlapping and dense, so it has no internal overlap
    let empty = Tensor::zeros(&[0, 1], DType::F32).unwrap();
    let e = empty.make_view(&[0, 3], &[1, 0], 0).unwrap();
    assert!(!e.has_internal_overlap());
    e.copy_(&Tensor::zeros(&[3], DType::F32).unwrap()).unwrap();
    e.fill_(Scalar::Int(1)).unwrap();
    assert_eq!(e.version(), 2);
    // `torch.zeros(1, 3).expand(2, 3).copy_(torch.zeros(4, 2, 3))` refuses the overlap
    // before the broadcast
    let row = Tensor::zeros(&[1, 3], DType::F32).unwrap();
    let x = row.make_view(&[2, 3], &[0, 1], 0).unwrap();
    let big = Tensor::zeros(&[4, 2, 3], DType::F32).unwrap();
    assert_eq!(x.copy_(&big).err().unwrap().status, Status::Overlap);
    assert_eq!(src.copy_(&big).err().unwrap().status, Status::Shape);
    // `x.copy_(x)` and `x.copy_(x.detach())` on an expanded x succeed (the same elements:
    // nothing to write) and still bump the version
    let v0 = x.version();
    x.copy_(&x).unwrap();
    x.copy_(
        &x.make_view(x.sizes(), x.strides(), x.storage_offset())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(x.version(), v0 + 2);
    // the same bytes in another dtype are not the same elements
    let xi = x
        .make_view_dtype(x.sizes(), x.strides(), 0, DType::I32)
        .unwrap();
    assert_eq!(x.copy_(&xi).err().unwrap().status, Status::Overlap);
}

/// PyTorch's copies store a bool as 0 / 1 even when the source byte holds another non-zero
/// value: `torch.tensor([2, 0, 3], dtype=torch.int8).view(torch.bool).clone()` holds bytes
/// 01 00 01 (so do contiguous, repeat and copy_).
#[test]
fn bool_copies_store_zero_or_one() {
    let bytes = Tensor::zeros(&[2, 3], DType::U8).unwrap();
    for (i, v) in [2, 0, 3, 4, 255, 1].into_iter().enumerate() {
        bytes
            .set(&[i as i64 / 3, i as i64 % 3], Scalar::Int(v))
            .unwrap();
    }
    let b = bytes
        .make_view_dtype(&[2, 3], &[3, 1], 0, DType::Bool)
        .unwrap();
    let raw = |t: &TensorImpl| -> Vec<u8> {
        let n = t.storage().nbytes();
        // SAFETY: the storage holds n initialised bytes.
        unsafe { std::slice::from_raw_parts(t.storage().data_ptr(), n).to_vec() }
    };
    assert_eq!(
        raw(&b.deep_clone(MemoryFormat::Preserve).unwrap()),
        [1, 0, 1, 1, 1, 1]
    );
    let bt = b.make_view(&[3, 2], &[1, 3], 0).unwrap();
    assert_eq!(
        raw(&bt.contiguous(MemoryFormat::Contiguous).unwrap()),
        [1, 1, 0, 1, 1, 1]
    );
    assert_eq!(
        raw(&b.repeat(&[1, 2]).unwrap()),
        [1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1]
    );
    let dst = Tensor::zeros(&[2, 3], DType::Bool).unwrap();
    dst.copy_(&b).unwrap();
    assert_eq!(raw(&dst), [1, 0, 1, 1, 1, 1]);
}

/// `torch.equal` compares sizes before promoting: `torch.equal(torch.zeros(2,
/// dtype=torch.uint16), torch.zeros(4, 1, dtype=torch.complex64))` is False, not an error.
#[test]
fn equal_checks_sizes_before_promotion() {
    let u = Tensor::zeros(&[2], DType::U16).unwrap();
    let c = Tensor::zeros(&[4, 1], DType::C64).unwrap();
    assert!(!u.equal(&c).unwrap());
    let same_size = Tensor::zeros(&[2], DType::C64).unwrap();
    assert_eq!(u.equal(&same_size).err().unwrap().status, Status::DType);
}

#[test]
fn equal_follows_torch_equal() {
    let a = base(6, DType::F32).view(&[2, 3]).unwrap();
    assert!(a
        .equal(&a.deep_clone(MemoryFormat::Preserve).unwrap())
        .unwrap());
    let tr = a
        .contiguous(MemoryFormat::Contiguous)
        .unwrap()
        .make_view(&[3, 2], &[1, 3], 0)
        .unwrap();
    assert!(tr
        .equal(&tr.contiguous(MemoryFormat::Contiguous).unwrap())
        .unwrap());
    assert!(!a.equal(&base(6, DType::F32)).unwrap(), "sizes differ");
    let b = a.deep_clone(MemoryFormat::Preserve).unwrap();
    b.set(&[1, 2], Scalar::Float(99.0)).unwrap();
    assert!(!a.equal(&b).unwrap());
    // NaN != NaN, even for the same tensor (torch.equal(n, n) is False)
    let n = Tensor::full(&[2], DType::F32, Scalar::Float(f64::NAN)).unwrap();
    assert!(!n.equal(&n).unwrap());
    // -0 == +0
    let pz = Tensor::full(&[1], DType::F64, Scalar::Float(0.0)).unwrap();
    let nz = Tensor::full(&[1], DType::F64, Scalar::Float(-0.0)).unwrap();
    assert!(pz.equal(&nz).unwrap());
    // promotion (torch 2.15): int/float True, f32 0.1 vs f64 0.1 False, u8 255 vs i8 -1 False
    let i = Tensor::arange(3, DType::I64).unwrap();
    assert!(i.equal(&Tensor::arange(3, DType::F32).unwrap()).unwrap());
    let f1 = Tensor::full(&[1], DType::F32, Scalar::Float(0.1)).unwrap();
    let f2 = Tensor::full(&[1], DType::F64, Scalar::Float(0.1)).unwrap();
    assert!(!f1.equal(&f2).unwrap());
    let u = Tensor::full(&[1], DType::U8, Scalar::Int(255)).unwrap();
    let s = Tensor::full(&[1], DType::I8, Scalar::Int(-1)).unwrap();
    assert!(!u.equal(&s).unwrap());
    // int64 2^24+1 vs float32 2^24: equal after promotion to float32
    let big = Tensor::full(&[1], DType::I64, Scalar::Int((1 << 24) + 1)).unwrap();
    let f = Tensor::full(&[1], DType::F32, Scalar::Float((1u64 << 24) as f64)).unwrap();
    assert!(big.equal(&f).unwrap());
    // bool by truth value
    let b2 = Tensor::full(&[2], DType::Bool, Scalar::Int(1)).unwrap();
    assert!(b2
        .equal(&Tensor::full(&[2], DType::I32, Scalar::Int(1)).unwrap())
        .unwrap());
    let e = Tensor::zeros(&[1], DType::U16)
        .unwrap()
        .equal(&Tensor::zeros(&[1], DType::I8).unwrap())
        .err()
        .unwrap();
    assert_eq!(e.status, Status::DType);
    // torch: "... attempted to promote UInt16 and Char"
    assert!(
        e.message.ends_with("attempted to promote UInt16 and Char"),
        "{}",
        e.message
    );
    assert!(Tensor::empty(&[0], DType::F32)
        .unwrap()
        .equal(&Tensor::empty(&[0], DType::I64).unwrap())
        .unwrap());
    assert!(!Tensor::zeros(&[2], DType::F32)
        .unwrap()
        .equal(&Tensor::zeros(&[1], DType::F32).unwrap())
        .unwrap());
}

#[test]
fn promote_types_matches_torch_table() {
    use DType::*;
    // Rows/columns in DType::ALL order, from torch.promote_types (PyTorch 2.15); "-" = error.
    let table = [
        "u8 i16 i16 i32 i64 f16 f32 f64 c64 c128 u8 bf16 - - -",
        "i16 i8 i16 i32 i64 f16 f32 f64 c64 c128 i8 bf16 - - -",
        "i16 i16 i16 i32 i64 f16 f32 f64 c64 c128 i16 bf16 - - -",
        "i32 i32 i32 i32 i64 f16 f32 f64 c64 c128 i32 bf16 - - -",
        "i64 i64 i64 i64 i64 f16 f32 f64 c64 c128 i64 bf16 - - -",
        "f16 f16 f16 f16 f16 f16 f32 f64 c64 c128 f16 f32 f16 f16 f16",
        "f32 f32 f32 f32 f32 f32 f32 f64 c64 c128 f32 f32 f32 f32 f32",
        "f64 f64 f64 f64 f64 f64 f64 f64 c128 c128 f64 f64 f64 f64 f64",
        "c64 c64 c64 c64 c64 c64 c64 c128 c64 c128 c64 c64 - - -",
        "c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 - - -",
        "u8 i8 i16 i32 i64 f16 f32 f64 c64 c128 bool bf16 - - -",
        "bf16 bf16 bf16 bf16 bf16 f32 f32 f64 c64 c128 bf16 bf16 bf16 bf16 bf16",
        "- - - - - f16 f32 f64 - - - bf16 u16 - -",
        "- - - - - f16 f32 f64 - - - bf16 - u32 -",
        "- - - - - f16 f32 f64 - - - bf16 - - u64",
    ];
    let name = |s: &str| -> Option<DType> {
        Some(match s {
            "u8" => U8,
            "i8" => I8,
            "i16" => I16,
            "i32" => I32,
            "i64" => I64,
            "f16" => F16,
            "f32" => F32,
            "f64" => F64,
            "c64" => C64,
            "c128" => C128,
            "bool" => Bool,
            "bf16" => BF16,
            "u16" => U16,
            "u32" => U32,
            "u64" => U64,
            _ => return None,
        })
    };
    for (i, row) in table.iter().enumerate() {
        for (j, cell) in row.split(' ').enumerate() {
            let got = DType::ALL[i].promote(DType::ALL[j]).ok();
            assert_eq!(got, name(cell), "{:?} {:?}", DType::ALL[i], DType::ALL[j]);
        }
    }
}

#[test]
fn repeat_matches_reference() {
    let t = base(6, DType::F32).view(&[2, 3]).unwrap();
    let r = t.repeat(&[2, 1, 2]).unwrap();
    assert_eq!(r.sizes(), &[2, 2, 6]);
    assert_eq!(r.strides(), &[12, 6, 1]);
    for idx in indices(r.sizes()) {
        assert_eq!(
            r.get(&idx).unwrap(),
            t.get(&[idx[1] % 2, idx[2] % 3]).unwrap()
        );
    }
    // transposed input
    let tr = t.make_view(&[3, 2], &[1, 3], 0).unwrap();
    let r = tr.repeat(&[2, 3]).unwrap();
    for idx in indices(r.sizes()) {
        assert_eq!(
            r.get(&idx).unwrap(),
            tr.get(&[idx[0] % 3, idx[1] % 2]).unwrap()
        );
    }
    let s = Tensor::full(&[], DType::I32, Scalar::Int(5)).unwrap();
    let r = s.repeat(&[2, 3]).unwrap();
    assert_eq!(r.strides(), &[3, 1]);
    assert!(reference_values(&r).iter().all(|v| *v == Scalar::Int(5)));
    assert_eq!(s.repeat(&[]).unwrap().sizes(), &[] as &[i64]);
    assert_eq!(t.repeat(&[0, 2]).unwrap().sizes(), &[0, 6]);
    let e = t.repeat(&[2]).err().unwrap();
    assert_eq!(e.message, "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
    let e = t.repeat(&[-1, 2]).err().unwrap();
    assert_eq!(
        e.message,
        "Trying to create tensor with negative dimension -2: [-2, 6]"
    );
    // many dims: the interleaved layout has 2x the dims (beyond the 64 of a tensor is fine)
    let one = Tensor::full(&[1; 40], DType::U8, Scalar::Int(9)).unwrap();
    let mut reps = vec![1i64; 40];
    reps[0] = 2;
    reps[39] = 3;
    let r = one.repeat(&reps).unwrap();
    assert_eq!(r.numel(), 6);
    assert!(reference_values(&r).iter().all(|v| *v == Scalar::UInt(9)));
}

#[test]
fn reshape_and_flatten() {
    let t = base(24, DType::F32).view(&[2, 3, 4]).unwrap();
    let v = t.reshape(&[6, 4]).unwrap();
    assert!(v.shares_storage(&t));
    let tr = t.make_view(&[4, 3, 2], &[1, 4, 12], 0).unwrap();
    let c = tr.reshape(&[-1]).unwrap();
    assert!(!c.shares_storage(&t));
    assert_eq!(c.strides(), &[1]);
    assert!(same(&reference_values(&c), &reference_values(&tr)));
    assert_eq!(tr.reshape(&[5, 5]).err().unwrap().status, Status::Shape);
    let f = t.flatten(1, 2).unwrap();
    assert_eq!(f.sizes(), &[2, 12]);
    assert!(f.shares_storage(&t));
    let f = tr.flatten(0, -1).unwrap();
    assert!(!f.shares_storage(&t));
    assert!(same(&reference_values(&f), &reference_values(&tr)));
    let a = t.flatten(1, 1).unwrap();
    assert!(!a.is_same(&t) && a.shares_storage(&t));
    assert_eq!((a.sizes(), a.strides()), (t.sizes(), t.strides()));
    let e = t.flatten(2, 1).err().unwrap();
    assert_eq!(
        e.message,
        "flatten() has invalid args: start_dim cannot come after end_dim"
    );
    let s = Tensor::full(&[], DType::F32, Scalar::Float(3.0)).unwrap();
    assert_eq!(s.flatten(0, -1).unwrap().sizes(), &[1]);
    assert_eq!(s.flatten(0, 1).err().unwrap().status, Status::Index);
    assert_eq!(t.flatten(0, 3).err().unwrap().status, Status::Index);
}

// ---- properties -------------------------------------------------------------------------

/// A random strided view: sizes in 0..4 per dim (ndim 0..=4), a random dim order, random
/// gaps (slicing), random stride-0 dims (expansion) and a random offset.
fn layout() -> impl Strategy<Value = (Vec<i64>, Vec<i64>, i64)> {
    (0usize..=4)
        .prop_flat_map(|nd| {
            (
                proptest::collection::vec(0i64..4, nd),
                proptest::collection::vec(1i64..3, nd),
                proptest::collection::vec(proptest::bool::weighted(0.15), nd),
                Just((0..nd).collect::<Vec<usize>>()).prop_shuffle(),
                0i64..3,
            )
        })
        .prop_map(|(sizes, gaps, expand, order, off)| {
            let mut strides = vec![0i64; sizes.len()];
            let mut acc = 1i64;
            for &d in order.iter().rev() {
                strides[d] = if expand[d] { 0 } else { acc * gaps[d] };
                acc *= sizes[d].max(1) * gaps[d];
            }
            (sizes, strides, off)
        })
}

fn materialise(dtype: DType, (sizes, strides, off): &(Vec<i64>, Vec<i64>, i64)) -> Tensor {
    // Room for the layout with every size >= 1, so lower-rank views of it stay in bounds.
    let ones: Vec<i64> = sizes.iter().map(|&n| n.max(1)).collect();
    let len = shape::extent_elems(&ones, strides, *off).unwrap();
    base(len, dtype).make_view(sizes, strides, *off).unwrap()
}

fn dtype() -> impl Strategy<Value = DType> {
    proptest::sample::select(valued().collect::<Vec<_>>())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn prop_copy_matches_reference(
        src_l in layout(),
        dorder in Just(vec![0usize, 1, 2, 3]).prop_shuffle(),
        dgaps in proptest::collection::vec(1i64..3, 4),
        doff in 0i64..3,
        s in dtype(),
        d in dtype(),
        drop in 0usize..3,
        one in proptest::option::of(0usize..4),
    ) {
        // dst: src's sizes in a random dim order with random gaps (never stride 0)
        let sizes = src_l.0.clone();
        let nd = sizes.len();
        let mut strides = vec![0i64; nd];
        let mut acc = 1i64;
        for &k in dorder.iter().rev().filter(|&&k| k < nd) {
            strides[k] = acc * dgaps[k];
            acc *= sizes[k].max(1) * dgaps[k];
        }
        let dst = materialise(d, &(sizes.clone(), strides, doff));
        // src: the same layout, possibly with a size-1 dim and leading dims dropped, so
        // that it broadcasts
        let full = materialise(s, &src_l);
        let mut n = full.sizes().to_vec();
        if let Some(k) = one.filter(|&k| k < nd) { n[k] = n[k].min(1); }
        let lead = if drop <= nd { drop } else { 0 };
        let src = full.make_view(&n[lead..], &full.strides()[lead..], full.storage_offset()).unwrap();
        let v0 = dst.version();
        dst.copy_(&src).unwrap();
        prop_assert!(same(&reference_values(&dst), &reference_copy(&dst, &src)));
        prop_assert_eq!(dst.version(), v0 + 1);
    }

    #[test]
    fn prop_clone_contiguous_to_dtype(l in layout(), s in dtype(), d in dtype()) {
        let t = materialise(s, &l);
        let vals = reference_values(&t);
        let c = t.deep_clone(MemoryFormat::Preserve).unwrap();
        prop_assert!(same(&reference_values(&c), &vals));
        prop_assert!(c.is_non_overlapping_and_dense());
        if t.is_non_overlapping_and_dense() { prop_assert_eq!(c.strides(), t.strides()); }
        let k = t.contiguous(MemoryFormat::Contiguous).unwrap();
        prop_assert!(k.is_contiguous(MemoryFormat::Contiguous));
        prop_assert!(same(&reference_values(&k), &vals));
        prop_assert_eq!(k.is_same(&t), t.is_contiguous(MemoryFormat::Contiguous));
        if t.ndim() == 4 {
            let cl = t.contiguous(MemoryFormat::ChannelsLast).unwrap();
            prop_assert!(cl.is_contiguous(MemoryFormat::ChannelsLast));
            prop_assert!(same(&reference_values(&cl), &vals));
        }
        let conv = t.to_dtype(d).unwrap();
        prop_assert!(same(&reference_values(&conv), &reference_copy(&conv, &t)));
        // equal against its clone unless NaN is present
        let has_nan = vals.iter().any(|v| matches!(v, Scalar::Float(f) if f.is_nan()));
        prop_assert_eq!(t.equal(&c).unwrap(), !has_nan);
        let r = t.reshape(&[-1]);
        if t.numel() > 0 || t.ndim() > 0 { prop_assert!(same(&reference_values(&r.unwrap()), &vals)); }
    }

    #[test]
    fn prop_repeat_matches_reference(l in layout(), extra in 0usize..2, reps in proptest::collection::vec(0i64..3, 6)) {
        let t = materialise(DType::I32, &l);
        let r: Vec<i64> = reps[..t.ndim() + extra].to_vec();
        let out = t.repeat(&r).unwrap();
        let lead = r.len() - t.ndim();
        for idx in indices(out.sizes()) {
            let src_idx: Vec<i64> = (0..t.ndim()).map(|d| idx[lead + d] % t.sizes()[d]).collect();
            prop_assert_eq!(out.get(&idx).unwrap(), t.get(&src_idx).unwrap());
        }
    }
}

#[test]
fn big_transposes_use_streaming_stores_correctly() {
    // 2048 x 2048 f32 = 16 MiB of output: the SIMD transposer streams its stores. Checked
    // against the converting path (a different kernel) and at sampled points.
    let n = 2048i64;
    let a = Tensor::arange(n * n, DType::F32).unwrap();
    let t = a.make_view(&[n, n], &[1, n], 0).unwrap();
    let c = t.contiguous(MemoryFormat::Contiguous).unwrap();
    let wide = t
        .to_dtype(DType::F64)
        .unwrap()
        .contiguous(MemoryFormat::Contiguous)
        .unwrap();
    assert!(c.equal(&wide).unwrap());
    for (i, j) in [
        (0, 0),
        (1, 0),
        (7, 9),
        (2047, 3),
        (1000, 2047),
        (2047, 2047),
    ] {
        assert_eq!(c.get(&[i, j]).unwrap(), Scalar::Float((i + j * n) as f64));
    }
    // 8-byte items (4x4 blocks), 18 MB of output, ragged 1500 = 4·375
    let m = 1500i64;
    let a = Tensor::arange(m * m, DType::F64).unwrap();
    let t = a.make_view(&[m, m], &[1, m], 0).unwrap();
    let c = t.contiguous(MemoryFormat::Contiguous).unwrap();
    let other = t
        .to_dtype(DType::I64)
        .unwrap()
        .contiguous(MemoryFormat::Contiguous)
        .unwrap();
    assert!(c.equal(&other).unwrap());
    assert_eq!(
        c.get(&[1499, 2]).unwrap(),
        Scalar::Float((1499 + 2 * m) as f64)
    );
    // NCHW -> NHWC of 16 MiB as well
    let x = Tensor::arange(16 * 64 * 64 * 64, DType::I32)
        .unwrap()
        .view(&[16, 64, 64, 64])
        .unwrap();
    let cl = x.contiguous(MemoryFormat::ChannelsLast).unwrap();
    assert!(cl.equal(&x).unwrap());
    assert_eq!(
        cl.get(&[3, 17, 40, 5]).unwrap(),
        x.get(&[3, 17, 40, 5]).unwrap()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn prop_fill_writes_exactly_the_view(l in layout(), d in dtype(), v in -300.0f64..300.0) {
        let t = materialise(d, &l);
        let base = Tensor::from_storage(t.storage(), 0, &[t.storage().nbytes() as i64 / d.itemsize() as i64], None, d).unwrap();
        let mut expect = reference_values(&base);
        let v0 = t.version();
        t.fill_(Scalar::Float(v)).unwrap(); // aliasing destinations too, as in PyTorch
        prop_assert_eq!(t.version(), v0 + 1);
        let probe = Tensor::empty(&[1], d).unwrap();
        probe.set(&[0], Scalar::Float(v)).unwrap();
        let want = probe.get(&[0]).unwrap();
        for idx in indices(t.sizes()) {
            let off = shape::element_offset(t.sizes(), t.strides(), t.storage_offset(), &idx).unwrap();
            expect[off as usize] = want;
        }
        prop_assert!(same(&reference_values(&base), &expect));
    }

    #[test]
    fn prop_equal_detects_one_changed_element(l in layout(), d in dtype(), pick in 0usize..1000) {
        let t = materialise(d, &l);
        let c = t.deep_clone(MemoryFormat::Contiguous).unwrap();
        let all = indices(t.sizes());
        // base()'s values overflow the narrow float8 types past their range, to NaN for the
        // fnuz ones; a NaN element equals nothing, not even its own copy (as in PyTorch).
        let nan = all
            .iter()
            .any(|i| matches!(t.get(i).unwrap(), Scalar::Float(f) if f.is_nan()));
        prop_assert_eq!(t.equal(&c).unwrap(), !nan);
        prop_assert_eq!(c.equal(&t).unwrap(), !nan);
        if !all.is_empty() && !nan {
            let idx = &all[pick % all.len()];
            // Overwrite one element; whether that changed it depends on the dtype (a bool
            // that was already true stays true), and equal must say exactly that.
            let old = c.get(idx).unwrap();
            c.set(idx, Scalar::Float(-1000.5)).unwrap();
            let changed = !same(&[c.get(idx).unwrap()], &[old]);
            prop_assert_eq!(t.equal(&c).unwrap(), !changed);
        }
    }
}

/// ATen's alias fast path: equal on the same elements of the same bytes answers without
/// walking every element (an expanded view of 10^18 elements here), and a float NaN is
/// still never equal to itself.
#[test]
fn equal_on_the_same_layout_is_immediate_and_nan_aware() {
    let huge = [1i64 << 30, 1 << 30];
    for (dtype, value, want) in [
        (DType::F32, Scalar::Float(1.5), true),
        (DType::F64, Scalar::Float(f64::NAN), false),
        (DType::C64, Scalar::Float(f64::NAN), false),
        (DType::I64, Scalar::Int(7), true),
        (DType::Bool, Scalar::Int(1), true),
    ] {
        let t = Tensor::full(&[1, 1], dtype, value).unwrap();
        let e = t.expand(&huge).unwrap();
        assert_eq!(e.numel(), 1 << 60);
        assert_eq!(e.equal(&e).unwrap(), want, "{dtype:?}");
        let alias = e.alias().unwrap();
        assert_eq!(e.equal(&alias).unwrap(), want, "{dtype:?} alias");
    }
    // One NaN among distinct elements is found; other layouts take the full comparison.
    let t = base(6, DType::F32);
    assert!(t.equal(&t).unwrap());
    t.set(&[4], Scalar::Float(f64::NAN)).unwrap();
    assert!(!t.equal(&t).unwrap());
    assert!(!t.equal(&t.alias().unwrap()).unwrap());
    let head = t.narrow(0, 0, 3).unwrap();
    assert!(head.equal(&head).unwrap());
}

/// float4_e2m1fn_x2 moves only as bytes, as in PyTorch: same-dtype copies (strided,
/// cloned, made contiguous) keep every byte; conversion, fill, equal, element access,
/// arange and copy_affine_ are refused with PyTorch's "not implemented" wording; and
/// float8 / float4 promote with no other dtype.
#[test]
fn float4_is_bit_copies_only_and_narrow_floats_do_not_promote() {
    let f4 = DType::F4E2M1FnX2;
    let bytes = base(12, DType::U8);
    let t = Tensor::empty(&[12], f4).unwrap();
    // SAFETY: both are fresh contiguous 12-byte buffers.
    unsafe { std::ptr::copy_nonoverlapping(bytes.data_ptr(), t.data_ptr(), 12) };
    let tr = t.make_view(&[3, 4], &[1, 3], 0).unwrap();
    let c = tr.contiguous(MemoryFormat::Contiguous).unwrap();
    let dst = Tensor::zeros(&[3, 4], f4).unwrap();
    dst.copy_(&tr).unwrap();
    for out in [&c, &dst] {
        for r in 0..3 {
            for k in 0..4 {
                // SAFETY: element (r, k) of a contiguous [3, 4] byte tensor; of t, byte k·3 + r.
                let (a, b) =
                    unsafe { (*out.data_ptr().add(r * 4 + k), *t.data_ptr().add(k * 3 + r)) };
                assert_eq!(a, b);
            }
        }
    }
    let f = Tensor::zeros(&[12], DType::F32).unwrap();
    let not_impl = |e: crate::error::Error, op: &str| {
        assert_eq!(e.status, Status::DType);
        assert_eq!(
            e.message,
            format!("\"{op}\" not implemented for 'Float4_e2m1fn_x2'")
        );
    };
    not_impl(f.copy_(&t).unwrap_err(), "copy_");
    not_impl(t.copy_(&f).unwrap_err(), "copy_");
    not_impl(t.to_dtype(DType::U8).err().unwrap(), "copy_");
    not_impl(t.fill_(Scalar::Int(0)).unwrap_err(), "fill_");
    not_impl(t.equal(&t).unwrap_err(), "equal");
    not_impl(t.get(&[0]).unwrap_err(), "item");
    not_impl(t.set(&[0], Scalar::Int(1)).unwrap_err(), "fill_");
    not_impl(Tensor::arange(3, f4).err().unwrap(), "arange");
    not_impl(
        Tensor::full(&[2], f4, Scalar::Int(0)).err().unwrap(),
        "fill_",
    );
    not_impl(
        t.copy_affine_(&t, 0, 1, &|_| (1.0, 0.0), None).unwrap_err(),
        "copy_affine_",
    );
    assert!(Tensor::zeros(&[2], f4).is_ok());
    // Narrow floats promote with nothing but themselves (PyTorch's message).
    let e = DType::F8E5M2.promote(DType::F16).unwrap_err();
    assert_eq!(
        e.message,
        "Promotion for Float8 Types is not supported, attempted to promote Float8_e5m2 and Half"
    );
    assert!(DType::F8E4M3Fn.promote(DType::F8E5M2).is_err());
    assert!(DType::Bool.promote(f4).is_err());
    assert_eq!(
        DType::F8E8M0Fnu.promote(DType::F8E8M0Fnu).unwrap(),
        DType::F8E8M0Fnu
    );
    let a = Tensor::zeros(&[2], DType::F8E4M3Fn).unwrap();
    assert!(!a.equal(&f.view(&[12]).unwrap()).unwrap()); // sizes differ first
    assert!(a.equal(&Tensor::zeros(&[2], DType::F32).unwrap()).is_err());
}

/// Conversions into and out of float8 go through float32 (as c10's constructors): a
/// float64 or int64 is rounded to float32 first, so a double that is a hair above a
/// float8 tie but within float32's rounding of it ties (to even) instead of rounding up.
#[test]
fn float8_conversions_round_through_float32() {
    let f8 = Tensor::zeros(&[1], DType::F8E4M3Fn).unwrap();
    // 1 + 2^-4 is the e4m3fn tie between 1.0 (0x38) and 1.125 (0x39).
    let x = 1.0 + 2f64.powi(-4) + 2f64.powi(-30);
    f8.set(&[0], Scalar::Float(x)).unwrap();
    assert_eq!(f8.get(&[0]).unwrap(), Scalar::Float(1.0));
    let d = Tensor::full(&[1], DType::F64, Scalar::Float(x)).unwrap();
    f8.copy_(&d).unwrap();
    assert_eq!(f8.get(&[0]).unwrap(), Scalar::Float(1.0));
    // int64 -> e5m2 rounds to nearest (1000 = 1.953125 · 2^9 -> 2^10), and overflows to inf.
    let i = Tensor::full(&[2], DType::I64, Scalar::Int(1000)).unwrap();
    i.set(&[1], Scalar::Int(-1_000_000)).unwrap();
    let e = i.to_dtype(DType::F8E5M2).unwrap();
    assert_eq!(e.get(&[0]).unwrap(), Scalar::Float(1024.0));
    assert_eq!(e.get(&[1]).unwrap(), Scalar::Float(f64::NEG_INFINITY));
    // float8 -> int truncates the decoded value; -> bool is != 0 (NaN is true).
    let n = Tensor::full(&[1], DType::F8E4M3Fn, Scalar::Float(-2.75)).unwrap();
    assert_eq!(
        n.to_dtype(DType::I32).unwrap().get(&[0]).unwrap(),
        Scalar::Int(-2)
    );
    let nan = Tensor::full(&[1], DType::F8E5M2, Scalar::Float(f64::NAN)).unwrap();
    assert_eq!(
        nan.to_dtype(DType::Bool).unwrap().get(&[0]).unwrap(),
        Scalar::Bool(true)
    );
}
