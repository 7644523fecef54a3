//! The `.npy` and `.safetensors` parsers on hostile bytes: truncated files, header lengths
//! past the end, offsets overlapping or outside the data, overflowing shapes, unknown
//! dtypes, garbage, and random mutations of valid files. Every input gets a status, never
//! a panic, and whatever loads stays inside its storage (every element is read back).

use crate::dtype::{DType, Scalar};
use crate::error::Status;
use crate::files::{npy, safetensors, storage_from_bytes};
use crate::tensor_impl::{MemoryFormat, Tensor};
use proptest::prelude::*;

fn arange_f32(n: i64) -> Tensor {
    Tensor::arange(n, DType::F32).unwrap()
}

/// A valid .npy file of `t` (as `tensor_save_npy` writes it).
fn npy_bytes(t: &Tensor) -> Vec<u8> {
    let mut b = npy::header_bytes(t.dtype(), t.sizes()).unwrap();
    let c = t.contiguous(MemoryFormat::Contiguous).unwrap();
    // SAFETY: a contiguous host tensor has nbytes() readable bytes at data_ptr(), alive
    // while `c` is.
    b.extend_from_slice(unsafe { std::slice::from_raw_parts(c.data_ptr(), c.nbytes()) });
    b
}

fn npy_with_dict(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    b.extend_from_slice(dict.as_bytes());
    b.extend_from_slice(data);
    b
}

/// A safetensors file with this JSON header and data.
fn st_with_header(json: &str, data: &[u8]) -> Vec<u8> {
    let mut b = (json.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(json.as_bytes());
    b.extend_from_slice(data);
    b
}

fn npy_status(bytes: &[u8]) -> Status {
    match npy::tensor_from_storage(&storage_from_bytes(bytes).unwrap()) {
        Ok(_) => Status::Ok,
        Err(e) => e.status,
    }
}

fn st_status(bytes: &[u8]) -> Status {
    match safetensors::tensors_from_storage(&storage_from_bytes(bytes).unwrap()) {
        Ok(_) => Status::Ok,
        Err(e) => e.status,
    }
}

/// Reads every element of everything the bytes load as (an out-of-bounds view would be
/// caught by the tensor's own bounds check or by a sanitizer / valgrind).
fn load_everything(bytes: &[u8]) {
    let s = storage_from_bytes(bytes).unwrap();
    let mut all = Vec::new();
    if let Ok(t) = npy::tensor_from_storage(&s) {
        all.push(t);
    }
    if let Ok(ts) = safetensors::tensors_from_storage(&s) {
        all.extend(ts.into_iter().map(|(_, t)| t));
    }
    for t in all {
        let c = t.contiguous(MemoryFormat::Contiguous).unwrap();
        assert!(c.nbytes() <= bytes.len() || c.numel() == 0 || !c.shares_storage(&t));
        if c.numel() > 0 {
            let _ = c.get(&vec![0; c.ndim()]).unwrap();
        }
    }
}

#[test]
fn npy_valid_files_load_c_and_fortran_order() {
    let t = arange_f32(12).view(&[3, 4]).unwrap();
    let got = npy::tensor_from_storage(&storage_from_bytes(&npy_bytes(&t)).unwrap()).unwrap();
    assert!(got.equal(&t).unwrap());
    // Fortran order: the same bytes read column-major.
    let data: Vec<u8> = (0..6u8).collect();
    let f = npy_with_dict(
        "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }\n",
        &data,
    );
    let got = npy::tensor_from_storage(&storage_from_bytes(&f).unwrap()).unwrap();
    assert_eq!(got.sizes(), &[2, 3]);
    assert_eq!(got.strides(), &[1, 2]);
    assert_eq!(got.get(&[1, 2]).unwrap().to_f64(), 5.0);
    // 0-d and empty arrays.
    let z = npy_with_dict(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
        &7.5f64.to_le_bytes(),
    );
    let got = npy::tensor_from_storage(&storage_from_bytes(&z).unwrap()).unwrap();
    assert_eq!(got.ndim(), 0);
    assert_eq!(got.get(&[]).unwrap().to_f64(), 7.5);
    let e = npy_with_dict(
        "{'descr': '<i4', 'fortran_order': False, 'shape': (0, 5), }",
        &[],
    );
    let got = npy::tensor_from_storage(&storage_from_bytes(&e).unwrap()).unwrap();
    assert_eq!((got.sizes(), got.numel()), (&[0i64, 5][..], 0));
}

#[test]
fn npy_big_endian_is_converted() {
    let mut data = Vec::new();
    for v in [1.5f32, -2.0, 1e30] {
        data.extend_from_slice(&v.to_be_bytes());
    }
    let b = npy_with_dict(
        "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }",
        &data,
    );
    let t = npy::tensor_from_storage(&storage_from_bytes(&b).unwrap()).unwrap();
    assert_eq!(t.get(&[0]).unwrap().to_f64(), 1.5);
    assert_eq!(t.get(&[2]).unwrap().to_f64(), 1e30f32 as f64);
    // Complex: each part is swapped on its own.
    let mut data = Vec::new();
    for v in [3.0f32, -4.0] {
        data.extend_from_slice(&v.to_be_bytes());
    }
    let b = npy_with_dict(
        "{'descr': '>c8', 'fortran_order': False, 'shape': (1,), }",
        &data,
    );
    let t = npy::tensor_from_storage(&storage_from_bytes(&b).unwrap()).unwrap();
    let Scalar::Complex(re, im) = t.get(&[0]).unwrap() else {
        panic!("complex expected")
    };
    assert_eq!((re, im), (3.0, -4.0));
}

#[test]
fn npy_hostile_headers_get_a_status() {
    let good = npy_bytes(&arange_f32(10));
    // Truncated anywhere: an I/O status (never a panic, never a view past the end).
    for n in 0..good.len() {
        assert_eq!(npy_status(&good[..n]), Status::Io, "truncated at {n}");
    }
    assert_eq!(npy_status(&good), Status::Ok);
    // Header length past the end of the file.
    let mut b = good.clone();
    b[8..10].copy_from_slice(&u16::MAX.to_le_bytes());
    assert_eq!(npy_status(&b), Status::Io);
    let mut b = good.clone();
    b[6] = 2;
    assert_eq!(npy_status(&b), Status::Io, "v2 reads a 4-byte length");
    b[6] = 9;
    assert_eq!(npy_status(&b), Status::Io, "unknown version");
    let cases: &[(&str, Status)] = &[
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775807, 4), }",
            Status::Overflow,
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
            Status::Overflow,
        ),
        (
            "{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }",
            Status::DType,
        ),
        (
            "{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (1,), }",
            Status::DType,
        ),
        (
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
            Status::DType,
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
            Status::Io,
        ),
        (
            "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
            Status::Io,
        ),
        ("{'descr': '<f4', 'shape': (1,)}", Status::Io),
        (
            "{'descr': '<f4', 'fortran_order': 1, 'shape': (1,)}",
            Status::Io,
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
            Status::Io,
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} trailing",
            Status::Io,
        ),
        ("{'descr': '<f4", Status::Io),
        ("\u{1}\u{2}garbage", Status::Io),
        ("", Status::Io),
    ];
    for (dict, want) in cases {
        assert_eq!(npy_status(&npy_with_dict(dict, &[0; 64])), *want, "{dict}");
    }
    let dims = vec!["1"; 65].join(", ");
    let d = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({dims}), }}");
    assert_eq!(
        npy_status(&npy_with_dict(&d, &[0; 4])),
        Status::InvalidArgument
    );
}

#[test]
fn safetensors_hostile_headers_get_a_status() {
    let data = [0u8; 16];
    let ok = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[2],"data_offsets":[8,16]}}"#;
    let good = st_with_header(ok, &data);
    assert_eq!(st_status(&good), Status::Ok);
    for n in 0..good.len() {
        assert_eq!(st_status(&good[..n]), Status::Io, "truncated at {n}");
    }
    let mut b = good.clone();
    b[..8].copy_from_slice(&(good.len() as u64).to_le_bytes());
    assert_eq!(st_status(&b), Status::Io, "header length past the end");
    b[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(st_status(&b), Status::Io, "huge header length");
    let cases: &[(&str, Status)] = &[
        // Overlapping, outside the data, a gap, reversed.
        (
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[2],"data_offsets":[4,12]}}"#,
            Status::Io,
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}}"#,
            Status::Io,
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}"#,
            Status::Io,
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[16,8]}}"#,
            Status::Io,
        ),
        // Shape not matching the byte length; overflowing shapes.
        (
            r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}}"#,
            Status::Io,
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,16]}}"#,
            Status::Overflow,
        ),
        // Unknown dtypes, and ones libtensor lacks (named).
        (
            r#"{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}"#,
            Status::DType,
        ),
        (
            // F4 with an odd last dim: no whole float4_e2m1fn_x2 pairs.
            r#"{"a":{"dtype":"F4","shape":[32,1],"data_offsets":[0,16]}}"#,
            Status::DType,
        ),
        ("not json at all", Status::Io),
        (r#"{"a":1}"#, Status::Io),
        (r#"["a"]"#, Status::Io),
    ];
    for (json, want) in cases {
        assert_eq!(st_status(&st_with_header(json, &data)), *want, "{json}");
    }
    let e = safetensors::tensors_from_storage(
        &storage_from_bytes(&st_with_header(
            r#"{"w":{"dtype":"F4","shape":[32,1],"data_offsets":[0,16]}}"#,
            &data,
        ))
        .unwrap(),
    )
    .err()
    .unwrap();
    assert!(
        e.message.contains("F4") && e.message.contains("'w'"),
        "{}",
        e.message
    );
}

#[test]
fn safetensors_misaligned_tensor_is_copied_and_aligned_ones_are_views() {
    let mut data = vec![9u8];
    data.extend_from_slice(&[0, 0, 0x80, 0x3f]); // 1.0f32 at data offset 1
    data.extend_from_slice(&[0, 0, 0]);
    let json = r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F32","shape":[1],"data_offsets":[1,5]},"c":{"dtype":"U8","shape":[3],"data_offsets":[5,8]}}"#;
    // Pad the header so the data starts at a multiple of 8 (as the writers do).
    let pad = (8 - (8 + json.len()) % 8) % 8;
    let json = format!("{json}{}", " ".repeat(pad));
    let s = storage_from_bytes(&st_with_header(&json, &data)).unwrap();
    let ts = safetensors::tensors_from_storage(&s).unwrap();
    let names: Vec<&str> = ts.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert!(std::ptr::eq(&**ts[0].1.storage(), &*s), "aligned: a view");
    assert!(
        !std::ptr::eq(&**ts[1].1.storage(), &*s),
        "misaligned: a copy"
    );
    assert_eq!(ts[1].1.get(&[0]).unwrap().to_f64(), 1.0);
    assert_eq!(ts[0].1.get(&[0]).unwrap().to_f64(), 9.0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_crash(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        load_everything(&bytes);
        let mut npy_like = b"\x93NUMPY\x01\x00".to_vec();
        npy_like.extend_from_slice(&bytes);
        load_everything(&npy_like);
    }

    #[test]
    fn mutated_valid_files_never_crash(
        which in 0usize..2,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        cut in any::<usize>(),
    ) {
        let mut b = if which == 0 {
            npy_bytes(&arange_f32(24).view(&[2, 3, 4]).unwrap())
        } else {
            let json = r#"{"x":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"y":{"dtype":"I64","shape":[1],"data_offsets":[24,32]}}"#;
            st_with_header(json, &[1u8; 32])
        };
        for (i, v) in edits {
            let n = b.len();
            b[i % n] = v;
        }
        let n = b.len();
        b.truncate(n - cut % 8);
        load_everything(&b);
    }
}

/// The safetensors float8 names (as the Python package writes them for torch's float8
/// dtypes) load as the float8 dtypes, sharing the file's bytes; F4 (single 4-bit values)
/// `[2, 6]` as float4_e2m1fn_x2 (pairs) `[2, 3]` over the same bytes; F6 (no libtensor
/// dtype) is refused by name.
#[test]
fn safetensors_float8_dtypes_load() {
    use crate::dtype::DType;
    let data: Vec<u8> = (0..6).collect();
    for (name, want) in [
        ("F8_E5M2", DType::F8E5M2),
        ("F8_E4M3", DType::F8E4M3Fn),
        ("F8_E5M2FNUZ", DType::F8E5M2Fnuz),
        ("F8_E4M3FNUZ", DType::F8E4M3Fnuz),
        ("F8_E8M0", DType::F8E8M0Fnu),
        ("F4", DType::F4E2M1FnX2),
    ] {
        let last = if name == "F4" { 6 } else { 3 };
        let json =
            format!(r#"{{"a":{{"dtype":"{name}","shape":[2,{last}],"data_offsets":[0,6]}}}}"#);
        let s = storage_from_bytes(&st_with_header(&json, &data)).unwrap();
        let got = safetensors::tensors_from_storage(&s).unwrap();
        let t = &got[0].1;
        assert_eq!((t.dtype(), t.sizes()), (want, &[2i64, 3][..]), "{name}");
        // SAFETY: a [2, 3] tensor of 1-byte elements over the storage's data.
        let bytes = unsafe { std::slice::from_raw_parts(t.data_ptr(), 6) };
        assert_eq!(bytes, &data[..], "{name}");
    }
    for name in ["F6_E2M3", "F6_E3M2"] {
        let json = format!(r#"{{"a":{{"dtype":"{name}","shape":[8],"data_offsets":[0,6]}}}}"#);
        let s = storage_from_bytes(&st_with_header(&json, &data)).unwrap();
        let e = safetensors::tensors_from_storage(&s).err().unwrap();
        assert_eq!(e.status, Status::DType, "{name}");
        assert!(e.message.contains(name), "{}", e.message);
    }
}
