//! The one GEMM primitive every kernel calls (`gemm` crate): strided matrix views and
//! `dst = alpha * dst + beta * lhs @ rhs` in float32, float64 or float16.

use crate::sys;
use crate::util::Tensor;

/// A strided matrix view: element (i, j) at `ptr + (i * rs + j * cs) * itemsize`.
#[derive(Clone, Copy)]
pub struct Mat {
    pub ptr: *mut u8,
    pub rs: isize,
    pub cs: isize,
}

/// `dst = alpha * dst (if read_dst) + beta * lhs @ rhs` for an m x k by k x n product, in
/// `dtype` (float32, float64, float16).
///
/// # Safety
///
/// `dtype` is float32, float64 or float16, and each `Mat` addresses, for every (i, j) of
/// its m x k, k x n or m x n shape, an aligned element of that dtype inside live memory:
/// readable for `lhs`, `rhs` (and `dst` when `read_dst`), writable for `dst`, with `dst`
/// overlapping neither `lhs` nor `rhs`, and nothing else using `dst` during the call.
pub unsafe fn gemm_any(
    dtype: i32,
    m: usize,
    n: usize,
    k: usize,
    dst: Mat,
    read_dst: bool,
    lhs: Mat,
    rhs: Mat,
    alpha: f64,
    beta: f64,
) {
    macro_rules! go {
        ($t:ty, $a:expr, $b:expr) => {
            // SAFETY: gemm::gemm needs what gemm_any's `# Safety` asks of its caller: every
            // element the three strided views address is in bounds, aligned and a $t (the
            // dtype this arm matched), and dst is exclusive and overlaps neither input.
            unsafe {
                gemm::gemm::<$t>(
                    m,
                    n,
                    k,
                    dst.ptr.cast(),
                    dst.cs,
                    dst.rs,
                    read_dst,
                    lhs.ptr.cast(),
                    lhs.cs,
                    lhs.rs,
                    rhs.ptr.cast(),
                    rhs.cs,
                    rhs.rs,
                    $a,
                    $b,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                )
            }
        };
    }
    match dtype {
        sys::TENSOR_FLOAT32 => go!(f32, alpha as f32, beta as f32),
        sys::TENSOR_FLOAT64 => go!(f64, alpha, beta),
        sys::TENSOR_FLOAT16 => go!(
            gemm::f16,
            gemm::f16::from_f64(alpha),
            gemm::f16::from_f64(beta)
        ),
        _ => unreachable!(),
    }
}

/// The matrix of dims (d0, d1) of `t` at its data pointer.
pub fn mat(t: Tensor, d0: usize, d1: usize) -> Mat {
    let st = t.strides();
    Mat {
        ptr: t.data_ptr().cast(),
        rs: st[d0] as isize,
        cs: st[d1] as isize,
    }
}

/// The matrix at `ptr` with row stride `rs` and column stride `cs` (elements of `T`).
pub fn strided<T>(ptr: *const T, rs: usize, cs: usize) -> Mat {
    Mat {
        ptr: ptr.cast_mut().cast(),
        rs: rs as isize,
        cs: cs as isize,
    }
}

pub fn offset(m: Mat, bytes: isize) -> Mat {
    Mat {
        ptr: m.ptr.wrapping_offset(bytes),
        ..m
    }
}
