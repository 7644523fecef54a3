//! The one GEMM primitive every kernel calls (`gemm` crate): strided matrix views and
//! `dst = alpha * dst + beta * lhs @ rhs` in float32, float64 or float16, on the model's
//! OpenMP threads (`parallel`) when the product is big enough to pay for them.

use super::{parallel, sgemm};
use crate::sys;
use crate::util::Tensor;

/// A strided matrix view: element (i, j) at `ptr + (i * rs + j * cs) * itemsize`.
#[derive(Clone, Copy)]
pub struct Mat {
    pub ptr: *mut u8,
    pub rs: isize,
    pub cs: isize,
}

// SAFETY: a Mat is an address and two strides; what may be read or written through it, and
// by which threads, is the contract of the unsafe function it is passed to (gemm_any: each
// thread writes its own block of dst).
unsafe impl Send for Mat {}
// SAFETY: as for Send: sharing the view shares no access by itself.
unsafe impl Sync for Mat {}

/// Multiply-adds per thread below which a product stays on one thread (a part must outweigh
/// waking the team, a few microseconds).
const PAR_MIN_MACS: usize = 1 << 17;

/// The `gemm` crate measures the caches once, lazily, behind a lock: first reached by a
/// whole team at once, the threads that lose the race park, and parking gives each a Rust
/// thread handle that an OpenMP thread keeps for its life (valgrind: "possibly lost"). One
/// small product on the calling thread first makes that measurement uncontended.
fn warm_up() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Big enough for the crate's blocked path (the one that measures the caches).
        const N: usize = 64;
        let mut d = vec![0f32; N * N];
        let a = vec![1f32; N * N];
        let view = |p: *const f32| Mat {
            ptr: p.cast_mut().cast(),
            rs: N as isize,
            cs: 1,
        };
        // SAFETY: three N x N row-major float32 matrices in Vecs of N * N elements each,
        // live for the call; d is written, a is read (as both factors), d overlaps neither.
        unsafe {
            gemm_serial(
                sys::TENSOR_FLOAT32,
                N,
                N,
                N,
                view(d.as_mut_ptr()),
                false,
                view(a.as_ptr()),
                view(a.as_ptr()),
                0.0,
                1.0,
            )
        };
    });
}

/// `dst = alpha * dst (if read_dst) + beta * lhs @ rhs` for an m x k by k x n product, in
/// `dtype` (float32, float64, float16). Big products are cut into blocks of columns (or of
/// rows, when m is the longer side) run on the model's OpenMP threads (`parallel::run`);
/// each block is the same `gemm_serial` call the whole product would make, over its part.
/// Called inside a parallel region (a kernel's own task), it runs on the calling thread.
///
/// # Safety
///
/// As `gemm_serial`.
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
    let macs = m.saturating_mul(n).saturating_mul(k);
    let parts = parallel::threads().min(macs / PAR_MIN_MACS).max(1);
    if parts == 1 {
        // SAFETY: the caller's contract, passed on.
        unsafe { gemm_serial(dtype, m, n, k, dst, read_dst, lhs, rhs, alpha, beta) };
        return;
    }
    warm_up();
    let item = crate::util::itemsize(dtype) as isize;
    let by_cols = n >= m;
    let len = if by_cols { n } else { m };
    parallel::run(parts, &|i| {
        let r = parallel::chunk(len, parts, 16, i);
        if r.is_empty() {
            return;
        }
        let s = r.start as isize * item;
        // SAFETY: block i is rows (or columns) r of dst, and the matching rows of lhs (or
        // columns of rhs): sub-views of the caller's views, so inside what its contract
        // makes valid; the blocks of dst are disjoint, so each thread writes elements no
        // other thread of this call touches, and lhs / rhs are only read.
        unsafe {
            if by_cols {
                gemm_serial(
                    dtype,
                    m,
                    r.len(),
                    k,
                    offset(dst, s * dst.cs),
                    read_dst,
                    lhs,
                    offset(rhs, s * rhs.cs),
                    alpha,
                    beta,
                )
            } else {
                gemm_serial(
                    dtype,
                    r.len(),
                    n,
                    k,
                    offset(dst, s * dst.rs),
                    read_dst,
                    offset(lhs, s * lhs.rs),
                    rhs,
                    alpha,
                    beta,
                )
            }
        }
    });
}

/// `gemm_any` on the calling thread.
///
/// # Safety
///
/// `dtype` is float32, float64 or float16, and each `Mat` addresses, for every (i, j) of
/// its m x k, k x n or m x n shape, an aligned element of that dtype inside live memory:
/// readable for `lhs`, `rhs` (and `dst` when `read_dst`), writable for `dst`, with `dst`
/// overlapping neither `lhs` nor `rhs`, and nothing else using `dst` during the call.
pub unsafe fn gemm_serial(
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
    if dtype == sys::TENSOR_FLOAT32 {
        let view = |x: Mat| sgemm::View {
            ptr: x.ptr.cast(),
            rs: x.rs,
            cs: x.cs,
        };
        // SAFETY: the views are float32 elements as the caller's contract says, which is
        // sgemm::gemm's contract; false means it did nothing.
        if unsafe {
            sgemm::gemm(
                m,
                n,
                k,
                view(dst),
                read_dst,
                alpha as f32,
                beta as f32,
                view(lhs),
                view(rhs),
            )
        } {
            return;
        }
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
