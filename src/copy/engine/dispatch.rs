//! The engine's dtype dispatch: each op's typed kernel picked once per call, then the
//! layouts handed to [`execute`] (big copies split by [`parallel`]).

use super::{execute, parallel, Plan};
use crate::copy::kernels::affine::Affine;
use crate::copy::kernels::{Bytes16, Convert, CopySame, Kernel};
use crate::dtype::{Bool, DType};
use crate::float8::{F8E4M3Fn, F8E4M3Fnuz, F8E5M2Fnuz, F8E8M0Fnu, F8E5M2};
use crate::shape::{self, Dims};
use half::{bf16, f16};

/// Runs `k` over two operands laid out as (`sizes`, `st0`) and (`sizes`, `st1`).
///
/// # Safety
/// Both layouts must be valid for their pointers (validated tensor layouts over live
/// storages); `p0` must be writable when the kernel writes.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn run_engine(
    sizes: &[i64],
    p0: *mut u8,
    st0: &[i64],
    isz0: usize,
    p1: *const u8,
    st1: &[i64],
    isz1: usize,
    k: &mut dyn Kernel,
) -> bool {
    match Plan::new(sizes, st0, isz0, st1, isz1) {
        // SAFETY: the plan only drops size-1 dims, reorders and merges the two layouts:
        // it addresses exactly their elements, which our contract makes valid.
        Some(plan) => unsafe { execute(&plan, p0, p1, isz0, isz1, k) },
        None => true,
    }
}

/// Copies (converting dtypes) `src` data, laid out with `src_st` over `sizes`, into `dst`
/// data laid out with `dst_st`. The one dtype dispatch of every copying op. Big copies
/// are split over threads when the user asked for more than one, or over the host's
/// executor when one is set (`parallel.rs`). `stream`: the write step's streaming choice
/// for the whole destination.
///
/// # Safety
/// As [`run_engine`]; the two regions must not overlap.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn copy_raw(
    sizes: &[i64],
    dst: *mut u8,
    dst_st: &[i64],
    dst_dtype: DType,
    src: *const u8,
    src_st: &[i64],
    src_dtype: DType,
    stream: bool,
) {
    let (i0, i1) = (dst_dtype.itemsize(), src_dtype.itemsize());
    // numel of a validated layout fits; its bytes saturate (only a size hint).
    // (Saturating: with a size-0 dim the other sizes may multiply past i64.)
    let numel = match shape::numel(sizes) {
        Ok(n) => n as usize,
        Err(_) => usize::MAX,
    };
    let out_bytes = numel.saturating_mul(i0);
    // Only a dst whose elements provably do not share memory is split: the parts of one
    // that may (PyTorch's TOO_HARD layouts, accepted by copy_) would write the same
    // element from two threads at once, and a 16-byte element could end up half each.
    let split =
        parallel::split(sizes, out_bytes).filter(|_| crate::layout::non_overlapping(sizes, dst_st));
    let Some(split) = split else {
        // SAFETY: our contract, which is copy_part's.
        return unsafe {
            copy_part(
                sizes, dst, dst_st, dst_dtype, src, src_st, src_dtype, stream,
            )
        };
    };
    // Each part is the sub-box [start, start + len) of dim d: disjoint parts of dst (its
    // elements do not share memory, checked above).
    let (dst_addr, src_addr) = (dst as usize, src as usize);
    let d = split.dim;
    parallel::run_parts(sizes[d], split, &|start, len| {
        let mut part: Dims = sizes.into();
        part[d] = len;
        let (od, os) = (start * dst_st[d] * i0 as i64, start * src_st[d] * i1 as i64);
        // SAFETY: the offsets stay inside the validated layouts (start < sizes[d]); the
        // parts write disjoint elements of a non-overlapping dst.
        unsafe {
            copy_part(
                &part,
                (dst_addr as *mut u8).offset(od as isize),
                dst_st,
                dst_dtype,
                (src_addr as *const u8).offset(os as isize),
                src_st,
                src_dtype,
                stream,
            )
        }
    });
}

/// [`copy_raw`] of one part on the calling thread (`stream`: for the whole output).
///
/// # Safety
/// As [`copy_raw`].
#[allow(clippy::too_many_arguments)]
unsafe fn copy_part(
    sizes: &[i64],
    dst: *mut u8,
    dst_st: &[i64],
    dst_dtype: DType,
    src: *const u8,
    src_st: &[i64],
    src_dtype: DType,
    stream: bool,
) {
    let (i0, i1) = (dst_dtype.itemsize(), src_dtype.itemsize());
    // The engine over the two layouts with kernel `$k` (a `&mut` to it).
    macro_rules! engine {
        ($k:expr) => {
            run_engine(sizes, dst, dst_st, i0, src, src_st, i1, $k)
        };
    }
    // bool -> bool converts too: a bool byte other than 0 / 1 (foreign memory, a
    // view_dtype) is written as 1, as PyTorch's copies do.
    if dst_dtype == src_dtype && dst_dtype != DType::Bool {
        // Same dtype: only the item width matters.
        macro_rules! same {
            ($word:ty) => {
                engine!(&mut CopySame::<$word>::new(stream))
            };
        }
        // SAFETY: our contract is run_engine's; the word moved is the item size i0
        // (== i1: same dtype), so the kernel's reads and writes are the layouts' items.
        unsafe {
            match i0 {
                1 => same!(u8),
                2 => same!(u16),
                4 => same!(u32),
                8 => same!(u64),
                _ => same!(Bytes16),
            }
        };
    } else {
        // SAFETY: our contract is run_engine's; S and D are the layouts' dtypes.
        unsafe {
            crate::dtype::with_dtype!(src_dtype, S => crate::dtype::with_dtype!(dst_dtype, D => {
                engine!(&mut Convert::<S, D>::new(stream));
            }));
        }
    }
}

/// Runs the affine kernel for `S -> D` over one layout pair (the dtype dispatch).
/// `stream`: the write step's streaming choice for the whole op's output; the write step
/// then ends the op with one fence ([`fence_streaming_stores`](crate::copy::kernels::fence_streaming_stores)).
///
/// # Safety
/// As the engine's `execute`: both layouts valid for their pointers, `dst` writable, the
/// two regions not overlapping.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn affine_raw(
    sizes: &[i64],
    dst: *mut u8,
    dst_st: &[i64],
    dst_dtype: DType,
    src: *const u8,
    src_st: &[i64],
    src_dtype: DType,
    scale: f64,
    shift: f64,
    stream: bool,
) {
    let (i0, i1) = (dst_dtype.itemsize(), src_dtype.itemsize());
    let Some(plan) = Plan::new(sizes, dst_st, i0, src_st, i1) else {
        return;
    };
    macro_rules! out {
        ($S:ty) => {
            match dst_dtype {
                DType::U8 => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, u8>::new(scale, shift, stream),
                ),
                DType::I8 => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, i8>::new(scale, shift, stream),
                ),
                DType::I16 => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, i16>::new(scale, shift, stream),
                ),
                DType::I32 => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, i32>::new(scale, shift, stream),
                ),
                DType::I64 => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, i64>::new(scale, shift, stream),
                ),
                DType::U16 => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, u16>::new(scale, shift, stream),
                ),
                DType::U32 => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, u32>::new(scale, shift, stream),
                ),
                DType::U64 => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, u64>::new(scale, shift, stream),
                ),
                DType::Bool => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, Bool>::new(scale, shift, stream),
                ),
                DType::F16 => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, f16>::new(scale, shift, stream),
                ),
                DType::BF16 => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, bf16>::new(scale, shift, stream),
                ),
                DType::F32 => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, f32>::new(scale, shift, stream),
                ),
                DType::F64 => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, f64>::new(scale, shift, stream),
                ),
                DType::F8E5M2 => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, F8E5M2>::new(scale, shift, stream),
                ),
                DType::F8E4M3Fn => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, F8E4M3Fn>::new(scale, shift, stream),
                ),
                DType::F8E5M2Fnuz => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, F8E5M2Fnuz>::new(scale, shift, stream),
                ),
                DType::F8E4M3Fnuz => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, F8E4M3Fnuz>::new(scale, shift, stream),
                ),
                DType::F8E8M0Fnu => execute(
                    &plan,
                    dst,
                    src,
                    i0,
                    i1,
                    &mut Affine::<$S, F8E8M0Fnu>::new(scale, shift, stream),
                ),
                // Refused by the op before any data is touched.
                DType::C64 | DType::C128 => unreachable!("copy_affine_ on complex"),
                DType::F4E2M1FnX2 => unreachable!("copy_affine_ on float4_e2m1fn_x2"),
            }
        };
    }
    // SAFETY: the plan covers the caller's layouts (valid for dst and src, dst writable,
    // not overlapping: our contract, which is execute's); the kernel's S and D are the
    // dtypes the layouts were given in (i0, i1 their item sizes).
    unsafe {
        crate::dtype::with_dtype!(src_dtype, S => { out!(S); });
    }
}
