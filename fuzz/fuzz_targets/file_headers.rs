//! The `.npy` and `.safetensors` header parsers (issue 11) on arbitrary bytes: every input
//! is either refused with a status or loads as tensors whose every element lies inside the
//! file's bytes (each one is read back; ASan catches any view reaching outside).
#![no_main]

use libfuzzer_sys::fuzz_target;
// The core is crate-private; `tensor::fuzzing` re-exports what this target drives (it
// exists only in builds with `--cfg fuzzing`, as .ci/fuzz.sh and cargo-fuzz make them).
use tensor::fuzzing::{npy, safetensors, storage_from_bytes, MemoryFormat, Tensor};

fn read_all(t: &Tensor) {
    if let Ok(c) = t.contiguous(MemoryFormat::Contiguous) {
        let n = c.nbytes();
        if n > 0 {
            // SAFETY: a contiguous host tensor has nbytes() readable bytes at data_ptr().
            let bytes = unsafe { std::slice::from_raw_parts(c.data_ptr(), n) };
            std::hint::black_box(bytes.iter().fold(0u8, |a, &b| a ^ b));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = npy::parse_header(data);
    let _ = safetensors::parse(data);
    let Ok(storage) = storage_from_bytes(data) else {
        return;
    };
    if let Ok(t) = npy::tensor_from_storage(&storage) {
        read_all(&t);
    }
    if let Ok(ts) = safetensors::tensors_from_storage(&storage) {
        for (_, t) in &ts {
            read_all(t);
        }
    }
});
