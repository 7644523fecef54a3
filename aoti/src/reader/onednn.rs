//! oneDNN's memory descriptor as a `freezing=True` package stores it beside each packed
//! weight (`constants_info_[i].opaque_metadata`: the bytes `mkldnn._get_mkldnn_serialized_md`
//! gave at compile time), and the element offsets of a blocked layout it describes.
//!
//! The blob is oneDNN's `dnnl_memory_desc` written field by field, little-endian: an int
//! version (1), then `ndims` (int), `dims[12]` (int64), `data_type` (int, padded to 8),
//! `padded_dims[12]`, `padded_offsets[12]`, `offset0` (int64), `format_kind` (int, padded
//! to 8) and, for the blocked kind (2), `strides[12]`, `inner_nblks` (int, padded to 8),
//! `inner_blks[12]` and `inner_idxs[12]` (int64), then the extra flags (int) and fields
//! only quantized weights use. A blocked layout places element `(i_0, .., i_n)` at
//! `offset0 + sum_d (i_d / B_d) * strides[d] + inner`, `B_d` the product of the inner blocks
//! on dim d and `inner` the element's position in the innermost block tile (the blocks
//! listed outermost first). That offset is a sum of one term per dim (`Layout::terms`).

use super::{invalid, Result};

const MAX_DIMS: usize = 12;
/// Bytes up to and including `inner_idxs`, plus the extra flags.
const MIN_LEN: usize = 8 + 96 + 8 + 96 + 96 + 8 + 8 + 96 + 8 + 96 + 96 + 4;

/// A blocked oneDNN layout: the logical dims, libtensor's dtype code, the elements it spans,
/// and what places an element (`terms`: per dim, the part of the element offset each index
/// contributes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub dims: Vec<i64>,
    pub dtype: i32,
    /// Elements the padded layout spans: its largest offset, plus 1.
    pub span: u64,
    /// Without inner blocks, a plain strided layout: its strides and offset0.
    pub plain: Option<(Vec<i64>, i64)>,
    strides: Vec<u64>,
    /// Per dim, the product of its inner blocks.
    block: Vec<u64>,
    /// The inner blocks, outermost first: (size, dim).
    inner: Vec<(u64, usize)>,
    offset0: u64,
}

fn int(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn int64s(b: &[u8], at: usize) -> [i64; MAX_DIMS] {
    std::array::from_fn(|k| {
        i64::from_le_bytes(b[at + 8 * k..at + 8 * k + 8].try_into().expect("8 bytes"))
    })
}

/// libtensor's dtype code (c10's ScalarType) of a oneDNN data type the weights use.
fn dtype_of(dt: i32) -> Option<i32> {
    match dt {
        1 => Some(5),  // f16 -> Half
        2 => Some(15), // bf16 -> BFloat16
        3 => Some(6),  // f32 -> Float
        _ => None,
    }
}

impl Layout {
    /// Reads `blob`; refuses what is not a plain blocked layout of float16 / bfloat16 /
    /// float32 with no padding offsets (what `freezing=True` writes for float weights),
    /// naming the field.
    pub fn parse(blob: &[u8]) -> Result<Layout> {
        if blob.len() < MIN_LEN {
            return invalid(format!(
                "oneDNN memory descriptor of {} bytes (at least {MIN_LEN} expected)",
                blob.len()
            ));
        }
        let version = int(blob, 0);
        if version != 1 {
            return invalid(format!(
                "oneDNN memory descriptor version {version} (this reader knows version 1)"
            ));
        }
        let nd = int(blob, 4);
        if !(1..=MAX_DIMS as i32).contains(&nd) {
            return invalid(format!("oneDNN memory descriptor with {nd} dims"));
        }
        let nd = nd as usize;
        let dims = int64s(blob, 8);
        let dt = int(blob, 104);
        let padded = int64s(blob, 112);
        let poffs = int64s(blob, 208);
        let off0 = i64::from_le_bytes(blob[304..312].try_into().expect("8 bytes"));
        let kind = int(blob, 312);
        let strides = int64s(blob, 320);
        let nblks = int(blob, 416);
        let blks = int64s(blob, 424);
        let idxs = int64s(blob, 520);
        let flags = int(blob, 616);
        let Some(dtype) = dtype_of(dt) else {
            return invalid(format!(
                "oneDNN data type {dt} (float16 1, bfloat16 2, float32 3 are read)"
            ));
        };
        if kind != 2 {
            return invalid(format!(
                "oneDNN format kind {kind} (only the blocked kind, 2, is read)"
            ));
        }
        if flags != 0 {
            return invalid(format!(
                "oneDNN memory descriptor extra flags {flags:#x} (compensation for quantized weights is not read)"
            ));
        }
        if !(0..=MAX_DIMS as i32).contains(&nblks) {
            return invalid(format!("oneDNN layout with {nblks} inner blocks"));
        }
        let nblks = nblks as usize;
        let dims = dims[..nd].to_vec();
        if dims.iter().any(|&d| d < 0) || off0 < 0 {
            return invalid(format!(
                "oneDNN memory descriptor dims {dims:?} / offset0 {off0} are negative"
            ));
        }
        if poffs[..nd].iter().any(|&p| p != 0) {
            return invalid(format!(
                "oneDNN padded offsets {:?} (only 0 is read)",
                &poffs[..nd]
            ));
        }
        // Each dim's total inner block, checked against the padded dims.
        let mut block = [1i64; MAX_DIMS];
        for j in 0..nblks {
            let (b, d) = (blks[j], idxs[j]);
            if b < 1 || !(0..nd as i64).contains(&d) {
                return invalid(format!(
                    "oneDNN inner block {j}: size {b} on dim {d} ({nd} dims)"
                ));
            }
            block[d as usize] = block[d as usize].checked_mul(b).unwrap_or(-1);
        }
        for d in 0..nd {
            let (p, b) = (padded[d], block[d]);
            if b < 1 || p < dims[d] || p % b != 0 || strides[d] < 0 {
                return invalid(format!(
                    "oneDNN dim {d}: size {}, padded {p}, inner block {b}, stride {} do not form a layout",
                    dims[d], strides[d]
                ));
            }
        }
        let overflow = || invalid(format!("oneDNN layout of dims {dims:?} overflows"));
        let mut l = Layout {
            dims: dims.clone(),
            dtype,
            span: 0,
            plain: (nblks == 0).then(|| (strides[..nd].to_vec(), off0)),
            strides: strides[..nd].iter().map(|&v| v as u64).collect(),
            block: block[..nd].iter().map(|&v| v as u64).collect(),
            inner: (0..nblks)
                .map(|j| (blks[j] as u64, idxs[j] as usize))
                .collect(),
            offset0: off0 as u64,
        };
        // The largest offset is at the largest padded index of every dim: each part of a
        // term grows with the index, and a padded dim's last index has every block digit
        // at its largest.
        let mut span = Some(1 + off0 as u64);
        for (d, &p) in padded[..nd].iter().enumerate() {
            let last = l.term(p as u64 - u64::from(p > 0), d);
            span = span.zip(last).and_then(|(s, t)| s.checked_add(t));
        }
        // The elements (dims' product) fit in the span: a oneDNN layout never overlaps, and
        // so terms_for allocates no more than the span.
        let numel = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d as u64));
        match (span, numel) {
            (Some(s), Some(n)) if n <= s => l.span = s,
            _ => return overflow(),
        }
        Ok(l)
    }

    /// Per dim, the offset part of each index (`offset0` in dim 0's).
    fn terms(&self) -> Vec<Vec<u64>> {
        (0..self.dims.len())
            .map(|d| {
                let extra = if d == 0 { self.offset0 } else { 0 };
                (0..self.dims[d] as u64)
                    // below the padded dim's last term, which did not overflow (parse)
                    .map(|i| self.term(i, d).unwrap_or(u64::MAX) + extra)
                    .collect()
            })
            .collect()
    }

    /// The offset part of index `i` of dim `d`: its outer block times the dim's stride,
    /// plus its digits in the inner blocks on dim d at their places in the block tile;
    /// None on overflow.
    fn term(&self, i: u64, d: usize) -> Option<u64> {
        let mut v = (i / self.block[d]).checked_mul(self.strides[d])?;
        let mut rest = i % self.block[d];
        let mut place: u64 = 1;
        for &(b, bd) in self.inner.iter().rev() {
            if bd == d {
                v = v.checked_add((rest % b).checked_mul(place)?)?;
                rest /= b;
            }
            place = place.checked_mul(b)?;
        }
        Some(v)
    }

    /// Whether `shape` is the layout's dims with the first two folded into one: a grouped
    /// weight's (g, o, ..) as (g * o, ..), the shape ATen gives a packed grouped convolution
    /// weight.
    fn folds(&self, shape: &[i64]) -> bool {
        let d = &self.dims;
        d.len() == shape.len() + 1
            && d.len() >= 2
            && d[0].checked_mul(d[1]) == Some(shape[0])
            && d[2..] == shape[1..]
    }

    /// When the layout read with `shape` (as `terms_for` reads it) is a plain strided one:
    /// its strides and element offset, so that the data can be used where it is.
    pub fn strided_for(&self, shape: &[i64]) -> Option<(Vec<i64>, i64)> {
        let (st, off) = self.plain.as_ref()?;
        if self.dims.as_slice() == shape {
            return Some((st.clone(), *off));
        }
        // (g, o, ..) read as (g * o, ..): one stride when g's is o's stride times o.
        let d = &self.dims;
        if !self.folds(shape) || st[0] != d[1].checked_mul(st[1])? && d[0] > 1 {
            return None;
        }
        let mut s = vec![st[1]];
        s.extend_from_slice(&st[2..]);
        Some((s, *off))
    }

    /// The layout read with `shape`, the dims the constant table declares: the same dims,
    /// or a grouped weight's (g, o, ..) as (g * o, ..), the shape ATen gives a packed
    /// grouped convolution weight. Per dim of `shape`, the offset term of each index.
    pub fn terms_for(&self, shape: &[i64]) -> Result<Vec<Vec<u64>>> {
        let d = &self.dims;
        if d.as_slice() == shape {
            return Ok(self.terms());
        }
        if self.folds(shape) {
            let per = d[1] as usize;
            let terms = self.terms();
            let first = (0..shape[0] as usize)
                .map(|o| terms[0][o / per] + terms[1][o % per])
                .collect();
            let mut t = vec![first];
            t.extend(terms[2..].iter().cloned());
            return Ok(t);
        }
        invalid(format!(
            "the oneDNN layout's dims {d:?} do not match the constant's shape {shape:?}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(dims: &[i64], strides: &[i64], blocks: &[(i64, i64)]) -> Vec<u8> {
        let mut b = vec![0u8; 772];
        let put = |b: &mut Vec<u8>, at: usize, v: i64, w: usize| {
            b[at..at + w].copy_from_slice(&v.to_le_bytes()[..w]);
        };
        put(&mut b, 0, 1, 4);
        put(&mut b, 4, dims.len() as i64, 4);
        put(&mut b, 104, 3, 4);
        put(&mut b, 312, 2, 4);
        put(&mut b, 416, blocks.len() as i64, 4);
        for (k, &d) in dims.iter().enumerate() {
            put(&mut b, 8 + 8 * k, d, 8);
            let blk: i64 = blocks
                .iter()
                .filter(|x| x.1 == k as i64)
                .map(|x| x.0)
                .product();
            put(&mut b, 112 + 8 * k, (d + blk - 1) / blk * blk, 8);
            put(&mut b, 320 + 8 * k, strides[k], 8);
        }
        for (j, &(s, d)) in blocks.iter().enumerate() {
            put(&mut b, 424 + 8 * j, s, 8);
            put(&mut b, 520 + 8 * j, d, 8);
        }
        b
    }

    #[test]
    fn blocked_offsets_follow_the_tile() {
        // [O/32][h][w][i][32o] of a 24 x 8 x 3 x 3 weight (O padded to 32).
        let l = Layout::parse(&blob(&[24, 8, 3, 3], &[2304, 32, 768, 256], &[(32, 0)])).unwrap();
        assert_eq!(l.dtype, 6);
        assert_eq!(l.span, 2304);
        let t = l.terms();
        let off = |o: usize, i: usize, h: usize, w: usize| t[0][o] + t[1][i] + t[2][h] + t[3][w];
        assert_eq!(off(5, 2, 1, 2), 5 + 2 * 32 + 768 + 2 * 256);
        // Two blocks on one dim and one on another (OIhw4i16o4i): i splits into 4 x 4.
        let l = Layout::parse(&blob(
            &[16, 16, 1, 1],
            &[256, 256, 256, 256],
            &[(4, 1), (16, 0), (4, 1)],
        ))
        .unwrap();
        let t = l.terms();
        let off = |o: usize, i: usize| t[0][o] + t[1][i];
        // i = 6: digit 1 of the outer 4-block (x 64), o = 3 (x 4), digit 2 of the inner
        assert_eq!(off(3, 6), 64 + 3 * 4 + 2);
    }

    #[test]
    fn grouped_dims_fold_into_the_first() {
        let l = Layout::parse(&blob(&[4, 2, 1, 3, 3], &[18, 9, 9, 3, 1], &[])).unwrap();
        let t = l.terms_for(&[8, 1, 3, 3]).unwrap();
        assert_eq!(t[0][5], 2 * 18 + 9);
        assert!(l.terms_for(&[8, 2, 3, 3]).is_err());
        // plain: the folded dim strides 9 (g strides 2 x 9)
        assert_eq!(l.strided_for(&[8, 1, 3, 3]), Some((vec![9, 9, 3, 1], 0)));
        let b = Layout::parse(&blob(&[4, 2, 1, 3, 3], &[36, 9, 9, 3, 1], &[])).unwrap();
        assert_eq!(b.strided_for(&[8, 1, 3, 3]), None);
        let b = Layout::parse(&blob(&[1000, 512], &[512, 1], &[])).unwrap();
        assert_eq!(b.strided_for(&[1000, 512]), Some((vec![512, 1], 0)));
        let b = Layout::parse(&blob(&[16, 8], &[128, 16], &[(16, 0)])).unwrap();
        assert_eq!(b.strided_for(&[16, 8]), None);
    }

    #[test]
    fn refuses_what_it_cannot_place() {
        let good = blob(&[8, 8], &[8, 1], &[]);
        assert!(Layout::parse(&good[..600]).is_err());
        let mut b = good.clone();
        b[0] = 2;
        assert!(Layout::parse(&b).is_err());
        let mut b = good.clone();
        b[312] = 1; // format kind "any"
        assert!(Layout::parse(&b).is_err());
        // A block that does not divide the padded dim.
        let mut b = blob(&[8, 8], &[8, 1], &[(3, 0)]);
        b[112] = 8;
        assert!(Layout::parse(&b).is_err());
        // A stride whose product overflows.
        assert!(Layout::parse(&blob(&[8, 8], &[i64::MAX / 2, 1], &[])).is_err());
        // Overlapping (more elements than offsets), and huge dims: refused before any
        // per-index work.
        assert!(Layout::parse(&blob(&[8, 8], &[1, 1], &[])).is_err());
        assert!(Layout::parse(&blob(&[1 << 40, 1 << 20], &[0, 0], &[])).is_err());
    }
}
