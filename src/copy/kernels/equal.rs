//! Element-wise equality of two same-dtype operands (`equal`).

use super::Kernel;
use crate::dtype::Element;
use std::mem::size_of;

/// Element-wise equality of two same-dtype operands (IEEE: NaN != NaN, -0 == +0; bool by
/// truth value). Stops at the first difference.
pub(crate) struct Equal<T> {
    pub equal: bool,
    _t: std::marker::PhantomData<T>,
}

impl<T> Equal<T> {
    pub fn new() -> Self {
        Equal {
            equal: true,
            _t: std::marker::PhantomData,
        }
    }
}

impl<T: Element> Kernel for Equal<T> {
    #[inline]
    unsafe fn run(&mut self, a: *mut u8, b: *const u8, n: usize, sa: isize, sb: isize) -> bool {
        // Chunks without an early exit inside, so the contiguous case vectorises; the
        // answer is checked after each chunk.
        const CHUNK: usize = 256;
        let sz = size_of::<T>() as isize;
        let same = |x: T, y: T| x.to_scalar() == y.to_scalar();
        let mut i = 0;
        while i < n {
            let end = n.min(i + CHUNK);
            let mut all = true;
            if sa == sz && sb == sz {
                // SAFETY: item j < end <= n of each operand is a + j·sz, b + j·sz (run's
                // contract); only reads.
                unsafe {
                    let (pa, pb) = (a as *const T, b as *const T);
                    for j in i..end {
                        all &= same(pa.add(j).read_unaligned(), pb.add(j).read_unaligned());
                    }
                }
            } else {
                // SAFETY: item j < end <= n of each operand is a + j·sa, b + j·sb (run's
                // contract); only reads.
                unsafe {
                    for j in i..end {
                        let x = (a.offset(j as isize * sa) as *const T).read_unaligned();
                        let y = (b.offset(j as isize * sb) as *const T).read_unaligned();
                        all &= same(x, y);
                    }
                }
            }
            if !all {
                self.equal = false;
                return false;
            }
            i = end;
        }
        true
    }
}
