//! libtensor_aoti's package readers (aoti/src/reader/: the zip and its entries, the
//! metadata and extern-kernel JSON, the ELF64 dynamic-symbol reader and its in-place
//! rename, the wrapper-source parser and the constants table, oneDNN's memory descriptors)
//! on arbitrary bytes. The readers are pure (no libtensor, no FFI), so the target includes
//! their source as is: libtensor_aoti is a cdylib only, and its shipped exports stay what
//! they are.
//! Oracles: no panic, no out-of-bounds access (ASan), no unbounded allocation; a rename
//! keeps the length, changes only the renamed bytes and leaves a file that parses to the
//! same symbols with the new names.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../aoti/src/reader/mod.rs"]
mod reader;

use reader::{elf::Elf, json::Json, onednn::Layout, package, wrapper};

fn elf(data: &[u8]) {
    let Ok(e) = Elf::parse(data) else {
        return;
    };
    let imports: Vec<String> = e.imports().map(|s| s.name.clone()).collect();
    let _ = e.defined("_binary_constants_bin_start");
    let mut copy = data.to_vec();
    if let Ok(n) = e.rename_undefined(&mut copy, b"aoti_", b"ltai_") {
        assert_eq!(copy.len(), data.len());
        let changed = copy.iter().zip(data).filter(|(a, b)| a != b).count();
        assert!(changed <= 5 * n, "{changed} bytes changed for {n} names");
        let again = Elf::parse(&copy).expect("a renamed file parses");
        assert_eq!(again.symbols.len(), e.symbols.len());
        for (a, b) in again.symbols.iter().zip(&e.symbols) {
            if b.undefined && b.name.starts_with("aoti_") {
                assert_eq!(a.name, format!("ltai_{}", &b.name[5..]));
            }
        }
        let _ = imports;
    }
}

fn text(data: &[u8]) {
    let s = String::from_utf8_lossy(data);
    let _ = Json::parse(&s);
    let _ = package::extern_ops(&s);
    let _ = wrapper::constants(&s).map(|c| c.iter().map(|k| k.bytes_needed(4)).count());
    for n in 0..3 {
        if let Ok(w) = wrapper::parse(&s, n) {
            assert_eq!(w.inputs.len(), n);
            for x in &w.inputs {
                assert_eq!(x.sizes.len(), x.ndim);
                for e in x.sizes.iter().chain(x.strides.iter().flatten()) {
                    let _ = e.eval(&|_| Some(3));
                }
            }
        }
    }
    let _ = wrapper::parse_expr(&s).map(|e| e.eval(&|_| Some(7)));
}

fn zip(data: &[u8]) {
    let Ok((mut z, m)) = package::open(Cursor::new(data), "fuzz.pt2") else {
        return;
    };
    let mut sink = Vec::new();
    if package::copy_so(&mut z, &m, &mut sink).is_ok() {
        assert_eq!(sink.len() as u64, m.so_size);
        assert!(sink.len() <= data.len());
        elf(&sink);
    }
    if let Ok(src) = &m.source {
        text(src.as_bytes());
    }
}

/// A oneDNN memory descriptor (a freezing=True constant's opaque_metadata): parsing does no
/// per-index work; when the span is small, every element's offset is below it.
fn onednn(data: &[u8]) {
    let Ok(l) = Layout::parse(data) else {
        return;
    };
    if l.span > 1 << 16 {
        return;
    }
    let terms = l.terms_for(&l.dims).expect("a layout reads with its own dims");
    let largest: u64 = terms.iter().map(|t| t.iter().max().copied().unwrap_or(0)).sum();
    assert!(terms.iter().any(|t| t.is_empty()) || largest < l.span);
    if let Some((st, off)) = l.strided_for(&l.dims) {
        assert_eq!(st.len(), l.dims.len());
        assert!(off >= 0);
    }
}

fuzz_target!(|data: &[u8]| {
    zip(data);
    elf(data);
    text(data);
    onednn(data);
});
