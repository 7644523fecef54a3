//! The host API: load a `.pt2` package (or a model `.so`), run it on libtensor tensors.
//!
//! Loading (`Model::load`): the package is read and checked (`reader::package`), the model
//! `.so` copied into an anonymous file of this process (`codefile`), its dynamic symbols
//! read (`reader::elf`) and diagnosed before any of its code runs (every import this build
//! cannot provide, named with its op, in one message: `diagnose`), its constants table
//! checked against the weights it carries (`check_constants`), the names of its `aoti_*`
//! imports rewritten to libtensor_aoti's private ones (`ltai_*`, the same length: see
//! `SHIM_PREFIX`; its `malloc` to `ltai_m`, for aligned weights), and only then `dlopen`ed
//! (`RTLD_NOW | RTLD_LOCAL`). The entry points (`AOTInductorModelContainer*`) are
//! `extern "C"` in the model itself.
//!
//! A model handle holds a lock: a run waits for another thread's run on the same model,
//! and a release waits for a running call to return.

use std::ffi::{c_char, c_void, CStr, CString};
use std::io::Read;
use std::ptr::{self, NonNull};
use std::sync::Mutex;

use crate::codefile::CodeFile;
use crate::error::{self, err, fn_name, host, host_value, Error, Result};
use crate::reader::{self, elf::Elf, package, wrapper};
use crate::spec;
use crate::sys::{self, tensor_t};
use crate::util::{self, out, Handle, Owned, Tensor};

/// The prefix of the shim's names as a model imports them, and as libtensor_aoti exports
/// them (build.rs: `--defsym` aliases; the `aoti_*` names themselves are hidden), so that
/// no library but our models binds to our shim and our models bind to nothing else's.
pub const MODEL_PREFIX: &[u8] = b"aoti_";
pub const SHIM_PREFIX: &[u8] = b"ltai_";

/// What the loader renames a model's `malloc` import to (the same length, unversioned:
/// `Elf::retarget_import`): `ltai_m`, glibc's `malloc` but for 64-byte alignment.
const MODEL_MALLOC: &[u8] = b"ltai_m";

/// From this size on `ltai_m` aligns to a cache line (64 bytes).
const ALIGNED_MALLOC_MIN: usize = 4096;

/// A model's `malloc` (its import renamed, `MODEL_MALLOC`): `malloc(n)`, 64-byte aligned
/// from `ALIGNED_MALLOC_MIN` bytes on (`posix_memalign`; `free` and `realloc` take it).
/// The runtime's one big malloc is the constants' blob (CPU `load_constants`: the weights
/// are copied into it and used from it); glibc's blocks of that size are 16 bytes past a
/// page, so every weight (at 64-byte offsets in the blob) was 16 bytes off a cache line
/// and each vector load of it in place read two (BERT-base at 1 thread on a Sapphire
/// Rapids: 230 ms a run, 195 aligned). Allocates nothing else and cannot panic.
#[no_mangle]
pub extern "C" fn ltai_m(n: usize) -> *mut c_void {
    if n < ALIGNED_MALLOC_MIN {
        // SAFETY: malloc takes any size.
        return unsafe { libc::malloc(n) };
    }
    let mut p = ptr::null_mut();
    // SAFETY: p is a writable pointer; 64 is a power of two and a multiple of the pointer
    // size, as posix_memalign requires.
    match unsafe { libc::posix_memalign(&mut p, 64, n) } {
        0 => p,
        e => {
            // malloc's contract: NULL and errno (posix_memalign returns its error instead).
            // SAFETY: __errno_location is this thread's errno.
            unsafe { *libc::__errno_location() = e };
            ptr::null_mut()
        }
    }
}

type ContainerHandle = *mut c_void;
type CreateFn =
    unsafe extern "C" fn(*mut ContainerHandle, usize, *const c_char, *const c_char) -> i32;
type DeleteFn = unsafe extern "C" fn(ContainerHandle) -> i32;
type CountFn = unsafe extern "C" fn(ContainerHandle, *mut usize) -> i32;
type RunFn = unsafe extern "C" fn(
    ContainerHandle,
    *mut Handle,
    usize,
    *mut Handle,
    usize,
    *mut c_void,
    *mut c_void,
) -> i32;
type LastErrorFn = unsafe extern "C" fn(*mut *const c_char) -> i32;

/// A library `dlopen` returned, closed on drop.
struct Library(NonNull<c_void>);

impl Library {
    /// `dlopen(path, flags)`, or IO with dlerror's text naming `what`.
    fn open(path: &CStr, flags: i32, what: &str) -> Result<Library> {
        // SAFETY: path is a NUL-terminated string. dlopen runs the library's initialisers:
        // for a model, after `diagnose` (tensor_aoti.h: loading runs the package's code);
        // for a library a model needs, that library's own.
        let lib = unsafe { libc::dlopen(path.as_ptr(), flags) };
        match NonNull::new(lib) {
            Some(l) => Ok(Library(l)),
            None => err(
                sys::TENSOR_ERR_IO,
                format!("dlopen of {what}: {}", dlerror()),
            ),
        }
    }

    /// The address of `name` in the library (or, for `dlsym`'s RTLD_DEFAULT, the process).
    fn sym(&self, name: &str) -> Option<NonNull<c_void>> {
        sym_in(self.0.as_ptr(), name)
    }

    /// The library's function `name` as the function-pointer type `F`.
    ///
    /// # Safety
    ///
    /// `F` is an `extern "C"` function-pointer type with the C signature the library
    /// defines `name` with, and the function is not called after the library is closed.
    unsafe fn function<F: Copy>(&self, name: &str) -> Option<F> {
        assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
        let p = self.sym(name)?.as_ptr();
        // SAFETY: F is a function-pointer type of the symbol's signature (the caller's
        // contract) and of a data pointer's size (asserted above); on this platform
        // (POSIX dlsym) a function's address converts to such a pointer.
        Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
    }
}

fn sym_in(handle: *mut c_void, name: &str) -> Option<NonNull<c_void>> {
    let c = CString::new(name).ok()?;
    // SAFETY: handle is a live dlopen handle or RTLD_DEFAULT; c is NUL-terminated.
    NonNull::new(unsafe { libc::dlsym(handle, c.as_ptr()) })
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: self.0 is a handle dlopen returned, closed exactly once, here; nothing
        // uses the library's code or data afterwards (Model drops its container first).
        unsafe { libc::dlclose(self.0.as_ptr()) };
    }
}

fn dlerror() -> String {
    // SAFETY: dlerror takes nothing; it returns NULL or this thread's NUL-terminated
    // message, valid until the thread's next dl* call (c_string copies it at once).
    error::c_string(unsafe { libc::dlerror() }).unwrap_or_else(|| "unknown dlerror".into())
}

/// A loaded model (`tensor_aoti_model_t`'s contents).
pub struct Model {
    /// Held open (a field: closed after `Model::drop` has deleted the container).
    _lib: Library,
    /// The model's code file, open while the library is (closed after it).
    _code: CodeFile,
    container: ContainerHandle,
    run: RunFn,
    delete: DeleteFn,
    last_error: Option<LastErrorFn>,
    num_inputs: usize,
    num_outputs: usize,
    /// What the wrapper source says about the inputs, or why there is nothing to check
    /// them against (then every run is refused).
    specs: std::result::Result<wrapper::Wrapper, String>,
    /// The metadata's `AOTI_CPU_ISA` ("" when unknown).
    cpu_isa: CString,
}

// SAFETY: the container and the library's functions are used by one thread at a time
// (the handle's lock), and AOTInductor's container may be used from any thread.
unsafe impl Send for Model {}
// SAFETY: as above: shared access reads only the counts and strings, set at load.
unsafe impl Sync for Model {}

/// libtensor_aoti's own handle (RTLD_NOLOAD | RTLD_GLOBAL: also makes its symbols global,
/// so that a model `dlopen`ed next binds its imports to them even when the host loaded us
/// with RTLD_LOCAL, as ctypes does). Kept for the process's life.
fn self_handle() -> Result<usize> {
    static SELF: std::sync::OnceLock<std::result::Result<usize, String>> =
        std::sync::OnceLock::new();
    let r = SELF.get_or_init(|| {
        // SAFETY: Dl_info is C data (pointers and integers), for which all zeros is a value.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        let anchor = self_handle as *const c_void;
        // SAFETY: anchor is an address in this library; info is a writable Dl_info.
        if unsafe { libc::dladdr(anchor, &mut info) } == 0 || info.dli_fname.is_null() {
            return Err("dladdr cannot find libtensor_aoti itself".into());
        }
        // SAFETY: dli_fname is non-NULL (checked above): the loader's NUL-terminated path
        // of this library, already loaded, so RTLD_NOLOAD opens no new code.
        let h = unsafe {
            libc::dlopen(
                info.dli_fname,
                libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_GLOBAL,
            )
        };
        if h.is_null() {
            return Err(format!("cannot make libtensor_aoti global: {}", dlerror()));
        }
        Ok(h as usize)
    });
    r.clone().or_else(|m| err(sys::TENSOR_ERR_INTERNAL, m))
}

/// Whether this build exports the shim function a model imports as `name` (`aoti_...`).
fn shim_has(me: usize, name: &str) -> bool {
    let private = format!(
        "{}{}",
        std::str::from_utf8(SHIM_PREFIX).unwrap_or_default(),
        &name[MODEL_PREFIX.len()..]
    );
    sym_in(me as *mut c_void, &private).is_some()
}

/// The ATen op a generated shim function belongs to: `aoti_torch_cpu_topk` -> `aten.topk`,
/// `aoti_torch_cpu_mm_out` -> `aten.mm.out`, `aoti_torch_cpu_index_Tensor` ->
/// `aten.index.Tensor`, `aoti_torch_cpu_mkldnn__convolution_pointwise` ->
/// `mkldnn._convolution_pointwise`; None for the management functions.
pub fn op_of(name: &str) -> Option<String> {
    let op = name.strip_prefix("aoti_torch_cpu_")?;
    if let Some(m) = op.strip_prefix("mkldnn__") {
        return Some(format!("mkldnn._{m}"));
    }
    // An in-place op's name ends with '_' before its overload: fill__Scalar.
    let lead = op.len() - op.trim_start_matches('_').len();
    let body = &op[lead..];
    if let Some(at) = body.find("__") {
        return Some(format!(
            "aten.{}{}_.{}",
            &op[..lead],
            &body[..at],
            &body[at + 2..]
        ));
    }
    if let Some((base, last)) = op.rsplit_once('_') {
        let overload = last == "out" || last.starts_with(|c: char| c.is_ascii_uppercase());
        if overload && !base.trim_start_matches('_').is_empty() {
            return Some(format!("aten.{base}.{last}"));
        }
    }
    Some(format!("aten.{op}"))
}

/// A shim function only a `freezing=True` package calls: the oneDNN / MKL kernels of packed
/// weights (`mkldnn__convolution_pointwise`, `_linear_pointwise`, `_mkl_linear`, the
/// quantized ones), not `mkldnn_rnn_layer`, which unfrozen LSTMs call.
fn frozen_kernel(n: &str) -> bool {
    [
        "mkldnn__",
        "_linear_pointwise",
        "_mkl_linear",
        "_qlinear",
        "_qconv",
    ]
    .iter()
    .any(|p| {
        n.strip_prefix("aoti_torch_cpu_")
            .is_some_and(|r| r.starts_with(p))
    })
}

/// Refuses, before any of the model's code runs, a model that imports what this process
/// cannot provide, listing every such import (with the op a shim function belongs to) in
/// one message: shim functions this build lacks (saying so when they are a `freezing=True`
/// package's kernels of packed weights), ops that need libtorch's proxy executor (named by the
/// extern-kernel JSON), libraries it needs that cannot be loaded, and other imports
/// (`Sleef_*`, `GOMP_*`, ...) neither the process nor those libraries define.
fn diagnose(elf: &Elf, extern_json: Option<&str>, needed: &[Library]) -> Result<()> {
    let me = self_handle()?;
    let mut lacks = Vec::new();
    let mut freezing = false;
    let mut proxy = false;
    let mut other = Vec::new();
    for s in elf.imports() {
        let n = s.name.as_str();
        if n.as_bytes().starts_with(MODEL_PREFIX) {
            if n == "aoti_torch_proxy_executor_call_function" {
                proxy = true;
            } else if frozen_kernel(n) && !shim_has(me, n) {
                freezing = true;
                lacks.push(n.to_string());
            } else if !shim_has(me, n) {
                lacks.push(n.to_string());
            }
        } else if sym_in(libc::RTLD_DEFAULT, n).is_none()
            && !needed.iter().any(|l| l.sym(n).is_some())
        {
            other.push(n.to_string());
        }
    }
    let mut parts = Vec::new();
    if !lacks.is_empty() {
        let named: Vec<String> = lacks
            .iter()
            .map(|n| match op_of(n) {
                Some(op) => format!("{n} ({op})"),
                None => n.clone(),
            })
            .collect();
        parts.push(format!(
            "shim functions this libtensor_aoti does not have: {}",
            named.join(", ")
        ));
    }
    if freezing {
        parts.push(
            "it was compiled with freezing=True and calls oneDNN kernels for packed weights that libtensor_aoti does not implement (listed above); compile with \"freezing\": False".into(),
        );
    }
    if proxy {
        let ops = match extern_json.map(package::extern_ops) {
            Some(Ok(ops)) if !ops.is_empty() => ops.join(", "),
            Some(Err(b)) => format!("(its extern-kernel JSON does not parse: {})", b.msg),
            _ => "(the package has no extern-kernel JSON naming them)".into(),
        };
        parts.push(format!(
            "ops without a C shim, which run through libtorch's proxy executor: {ops}"
        ));
    }
    if !other.is_empty() {
        let why = |n: &str| {
            if n.starts_with("Sleef_") {
                " (SLEEF vector math: libsleef, linked by libtensor_aoti, lacks it)"
            } else if n.starts_with("GOMP_") || n.starts_with("omp_") {
                " (OpenMP runtime)"
            } else {
                ""
            }
        };
        let named: Vec<String> = other.iter().map(|n| format!("{n}{}", why(n))).collect();
        parts.push(format!(
            "symbols neither this process nor the libraries the model needs define: {}",
            named.join(", ")
        ));
    }
    if parts.is_empty() {
        return Ok(());
    }
    err(
        sys::TENSOR_ERR_INVALID_ARGUMENT,
        format!(
            "the model needs what libtensor_aoti cannot provide, so none of it was run: {}",
            parts.join("; ")
        ),
    )
}

/// The libraries the model's DT_NEEDED entries name, loaded (RTLD_LOCAL) to look symbols up
/// in, or one refusal naming those that cannot be loaded. RTLD_NODELETE: they stay for the
/// process, as they do once a model loads (a model library is never unloaded); closing one
/// again after a refusal would unload libgomp and lose what its initialisers allocated.
fn needed_libraries(elf: &Elf) -> Result<Vec<Library>> {
    let mut libs = Vec::new();
    let mut missing = Vec::new();
    for n in &elf.needed {
        let Ok(c) = CString::new(n.as_str()) else {
            missing.push(format!("{n} (not a file name)"));
            continue;
        };
        match Library::open(
            &c,
            libc::RTLD_LAZY | libc::RTLD_LOCAL | libc::RTLD_NODELETE,
            n,
        ) {
            Ok(l) => libs.push(l),
            Err(e) => {
                let hint = if n.contains("libtorch") || n.contains("libc10") {
                    " (a package compiled with aot_inductor.link_libtorch=True: compile with False)"
                } else {
                    ""
                };
                missing.push(format!("{}{hint}", e.msg));
            }
        }
    }
    if missing.is_empty() {
        Ok(libs)
    } else {
        err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!(
                "the model needs libraries that cannot be loaded, so none of it was run: {}",
                missing.join("; ")
            ),
        )
    }
}

/// A `freezing=True` weight (constant `i`, of dtype `code`): its oneDNN memory descriptor
/// reads, describes the constant's dtype and shape, and the layout it describes fits the
/// constant's data.
fn check_packed(i: usize, c: &wrapper::Constant, code: i32) -> Result<()> {
    let bad = |m: String| Error {
        status: sys::TENSOR_ERR_INVALID_ARGUMENT,
        msg: format!("constant {i} ({}): {m}", c.name),
    };
    let l = util::onednn_layout(&c.opaque_metadata, code).map_err(|e| bad(e.msg))?;
    match l.span.checked_mul(util::itemsize(code) as u64) {
        Some(need) if need <= c.data_size => {}
        _ => {
            return Err(bad(format!(
                "its oneDNN layout of dims {:?} spans {} elements, its data has {} bytes",
                l.dims, l.span, c.data_size
            )))
        }
    }
    // (after the span: what terms_for allocates is bounded by it)
    l.terms_for(&c.shape).map_err(|b| bad(b.msg))?;
    Ok(())
}

/// Checks the wrapper's constants table against the weights the `.so` carries
/// (`_binary_constants_bin_start` .. `_end`, or, for `USE_MMAP_SELF`, the blob appended
/// to the file whose size the start's header gives): every constant's view fits its data
/// and all the data fits the blob. Returns where in the file the blob is when it is the
/// `.so`'s own data, which the model's runtime copies out when it is created (CPU
/// `load_constants`: a malloc'd blob, `constant_ptr`'s memcpy), and which no run reads.
fn check_constants(
    elf: &Elf,
    bytes: &[u8],
    constants: &[wrapper::Constant],
) -> Result<Option<std::ops::Range<usize>>> {
    let bad = |m: String| err(sys::TENSOR_ERR_INVALID_ARGUMENT, m);
    let mut total: u64 = 0;
    for (i, c) in constants.iter().enumerate() {
        let name = c.dtype.as_deref().unwrap_or("");
        let Some(code) = util::dtype_code(name) else {
            return bad(format!("constant {i} ({}): unknown dtype '{name}'", c.name));
        };
        if c.mkldnn {
            check_packed(i, c, code)?;
        } else {
            match c.bytes_needed(util::itemsize(code) as u64) {
                Some(need) if need <= c.data_size => {}
                Some(need) => {
                    return bad(format!(
                        "constant {i} ({}): its shape {:?}, stride {:?}, offset {} and dtype need {need} bytes, its data has {}",
                        c.name, c.shape, c.stride, c.offset, c.data_size
                    ))
                }
                None => {
                    return bad(format!(
                        "constant {i} ({}): shape {:?} / stride {:?} are invalid or overflow",
                        c.name, c.shape, c.stride
                    ))
                }
            }
        }
        if !c.from_folded {
            total = total.saturating_add(c.data_size);
        }
    }
    if total == 0 {
        return Ok(None);
    }
    let (Some(start), Some(end)) = (
        elf.defined("_binary_constants_bin_start"),
        elf.defined("_binary_constants_bin_end"),
    ) else {
        return bad(format!(
            "the constants table holds {total} bytes, the model .so defines no weights (_binary_constants_bin_start/_end)"
        ));
    };
    let size = end.value.saturating_sub(start.value);
    let off = elf
        .file_range(start.value, size, "the weights blob")
        .map_err(|b| Error {
            status: sys::TENSOR_ERR_INVALID_ARGUMENT,
            msg: b.msg,
        })?;
    let mut have = size;
    if size == 16 && total > 16 {
        // USE_MMAP_SELF: [weights size, magic] here, the weights at the file's end.
        let w = u64::from_le_bytes(bytes[off..off + 8].try_into().unwrap_or_default());
        let len = bytes.len() as u64;
        if w > len || !(len - w).is_multiple_of(0x4000) {
            return bad(format!(
                "the weights appended to the model .so ({w} bytes by its header) do not fit its {len} bytes"
            ));
        }
        have = w;
    }
    if total > have {
        return bad(format!(
            "the constants table holds {total} bytes of weights, the model .so carries {have}"
        ));
    }
    Ok((have == size).then(|| off..off + size as usize))
}

/// Where a model's parts come from.
struct Parts {
    /// The wrapper source, or why there is none to use.
    source: std::result::Result<String, String>,
    metadata: Vec<(String, String)>,
    extern_kernels: Option<String>,
}

impl Parts {
    fn meta(&self, key: &str) -> Option<&str> {
        self.metadata
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

fn io_err(path: &str, e: impl std::fmt::Display) -> Error {
    Error {
        status: sys::TENSOR_ERR_IO,
        msg: format!("'{path}': {e}"),
    }
}

fn from_reader(path: &str, b: reader::Bad) -> Error {
    let status = if b.io {
        sys::TENSOR_ERR_IO
    } else {
        sys::TENSOR_ERR_INVALID_ARGUMENT
    };
    let msg = if b.msg.starts_with('\'') {
        b.msg
    } else {
        format!("'{path}': {}", b.msg)
    };
    Error { status, msg }
}

/// Copies the model `.so` of `path` (a package or a bare `.so`) into `code` and returns
/// what comes with it.
fn copy_model(path: &str, code: &CodeFile) -> Result<Parts> {
    let mut f = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
    let mut magic = [0u8; 4];
    f.read_exact(&mut magic).map_err(|e| io_err(path, e))?;
    let mut dst = code.file()?;
    if magic == *b"\x7fELF" {
        // A bare model .so: its wrapper source, metadata and extern kernels beside it.
        let stem = path.strip_suffix(".so").unwrap_or(path);
        let read = |p: String| -> Option<std::result::Result<String, String>> {
            let meta = std::fs::metadata(&p).ok()?;
            if meta.len() > package::MAX_TEXT {
                return Some(Err(format!(
                    "{p} is larger than {} bytes",
                    package::MAX_TEXT
                )));
            }
            Some(std::fs::read_to_string(&p).map_err(|e| format!("{p}: {e}")))
        };
        let source = read(format!("{stem}.cpp"))
            .unwrap_or_else(|| Err(format!("no wrapper source {stem}.cpp beside the model .so")));
        let metadata = match read(format!("{stem}_metadata.json")) {
            None => Vec::new(),
            Some(Ok(t)) => match reader::json::Json::parse(&t) {
                Ok(reader::json::Json::Object(m)) => m
                    .into_iter()
                    .filter_map(|(k, v)| v.as_str().map(|s| (k, s.to_string())))
                    .collect(),
                _ => {
                    return err(
                        sys::TENSOR_ERR_INVALID_ARGUMENT,
                        format!("'{stem}_metadata.json' is not a JSON object"),
                    )
                }
            },
            Some(Err(e)) => return err(sys::TENSOR_ERR_IO, e),
        };
        let extern_kernels = read(format!("{stem}.json")).and_then(|r| r.ok());
        use std::io::Seek;
        f.rewind().map_err(|e| io_err(path, e))?;
        std::io::copy(&mut f, &mut dst).map_err(|e| io_err(path, e))?;
        return Ok(Parts {
            source,
            metadata,
            extern_kernels,
        });
    }
    let (mut zip, model) = package::open(f, path).map_err(|b| from_reader(path, b))?;
    package::copy_so(&mut zip, &model, &mut dst).map_err(|b| from_reader(path, b))?;
    Ok(Parts {
        source: model.source.clone(),
        metadata: model.metadata.clone(),
        extern_kernels: model.extern_kernels.clone(),
    })
}

impl Model {
    fn load(path: &str) -> Result<Model> {
        self_handle()?;
        let code = CodeFile::create()?;
        let parts = copy_model(path, &code)?;
        let constants = parts.source.as_ref().ok().map(|s| wrapper::constants(s));
        let constants = match constants {
            Some(Ok(c)) => Some(c),
            Some(Err(b)) => {
                return err(
                    sys::TENSOR_ERR_INVALID_ARGUMENT,
                    format!("'{path}': the wrapper source's {}", b.msg),
                )
            }
            None => None,
        };
        // Read, diagnose and rename the imports of the code before it is loaded.
        let (needed, weights) = code.edit(|bytes| {
            let elf = Elf::parse(bytes).map_err(|b| from_reader(path, b))?;
            let needed = needed_libraries(&elf).map_err(|e| Error {
                msg: format!("'{path}': {}", e.msg),
                ..e
            })?;
            diagnose(&elf, parts.extern_kernels.as_deref(), &needed).map_err(|e| Error {
                msg: format!("'{path}': {}", e.msg),
                ..e
            })?;
            let weights = match &constants {
                Some(c) => check_constants(&elf, bytes, c).map_err(|e| Error {
                    msg: format!("'{path}': {}", e.msg),
                    ..e
                })?,
                None => None,
            };
            elf.rename_undefined(bytes, MODEL_PREFIX, SHIM_PREFIX)
                .map_err(|b| from_reader(path, b))?;
            // Aligned weights (ltai_m): a speed-up only, so a file whose `malloc` cannot be
            // renamed keeps glibc's.
            let _ = elf.retarget_import(bytes, "malloc", MODEL_MALLOC);
            Ok((needed, weights))
        })?;
        code.seal_size();
        let lib = Library::open(
            code.path(),
            libc::RTLD_NOW | libc::RTLD_LOCAL,
            &format!("the model of '{path}'"),
        )?;
        drop(needed); // the model holds its own references now
        let missing = |name: &str| Error {
            status: sys::TENSOR_ERR_INVALID_ARGUMENT,
            msg: format!("'{path}' is not an AOTInductor model: no {name}"),
        };
        // (On an error return `lib` is dropped: closed.)
        const CREATE: &str = "AOTInductorModelContainerCreateWithDevice";
        const RUN: &str = "AOTInductorModelContainerRun";
        const DELETE: &str = "AOTInductorModelContainerDelete";
        const N_IN: &str = "AOTInductorModelContainerGetNumInputs";
        const N_OUT: &str = "AOTInductorModelContainerGetNumOutputs";
        // SAFETY: each type is the C signature torch's aoti_runtime/interface.h declares
        // for that entry point (CreateFn, RunFn, ... above); the pointers live in the
        // Model, which holds the library open until after its last call (Drop).
        let (create, run, delete, n_in, n_out, last_error) = unsafe {
            (
                lib.function::<CreateFn>(CREATE)
                    .ok_or_else(|| missing(CREATE))?,
                lib.function::<RunFn>(RUN).ok_or_else(|| missing(RUN))?,
                lib.function::<DeleteFn>(DELETE)
                    .ok_or_else(|| missing(DELETE))?,
                lib.function::<CountFn>(N_IN).ok_or_else(|| missing(N_IN))?,
                lib.function::<CountFn>(N_OUT)
                    .ok_or_else(|| missing(N_OUT))?,
                lib.function::<LastErrorFn>("AOTInductorGetLastError"),
            )
        };
        let isa = parts.meta("AOTI_CPU_ISA").unwrap_or("");
        let mut m = Model {
            _lib: lib,
            _code: code,
            container: ptr::null_mut(),
            run,
            delete,
            last_error,
            num_inputs: 0,
            num_outputs: 0,
            specs: Err(String::new()),
            cpu_isa: CString::new(isa.replace('\0', "")).unwrap_or_default(),
        };
        // The weights in the loaded code, watched while the runtime creates its constants.
        let watch = weights.as_ref().and_then(|r| {
            let at = m._lib.sym("_binary_constants_bin_start")?.as_ptr() as usize;
            Some(at..at.saturating_add(r.len()))
        });
        let container = &mut m.container;
        // SAFETY: create is the model's CreateWithDevice (interface.h's signature): an
        // out-parameter for the container, 1 model, the device string "cpu" and no cubin
        // directory (NULL is allowed).
        let (rc, in_place) = crate::shim::watching(watch.clone().unwrap_or(0..0), || unsafe {
            create(container, 1, c"cpu".as_ptr(), ptr::null())
        });
        if rc != 0 || m.container.is_null() {
            let why = m.model_error();
            m.container = ptr::null_mut();
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("creating the model of '{path}' failed: {why}"),
            );
        }
        // The runtime has copied the weights out of the code (CPU `load_constants`), and
        // made no constant over them in place: their pages of the code file are freed (the
        // weights would be resident twice).
        if let (Some(r), Some(_), false) = (weights, watch, in_place) {
            m._code.release(r);
        }
        m._code.seal();
        // SAFETY: n_in is the model's GetNumInputs (interface.h's signature), called on
        // the live container create made, with a writable count.
        let rc_in = unsafe { n_in(m.container, &mut m.num_inputs) };
        // SAFETY: n_out is the model's GetNumOutputs (interface.h's signature), called on
        // the live container create made, with a writable count.
        if rc_in != 0 || unsafe { n_out(m.container, &mut m.num_outputs) } != 0 {
            return err(
                sys::TENSOR_ERR_INTERNAL,
                format!(
                    "'{path}': cannot read its input/output counts: {}",
                    m.model_error()
                ),
            );
        }
        m.specs = match &parts.source {
            Ok(src) => wrapper::parse(src, m.num_inputs)
                .map_err(|b| format!("its wrapper source's input checks do not parse: {}", b.msg)),
            Err(why) => Err(why.clone()),
        };
        if !error::quiet() {
            if let Err(why) = &m.specs {
                eprintln!(
                    "libtensor_aoti: '{path}': no input checks ({why}): tensor_aoti_run refuses every run of this model"
                );
            }
            if isa == "INVALID_VEC_ISA" {
                eprintln!(
                    "libtensor_aoti: '{path}' was compiled without vectorization (AOTI_CPU_ISA INVALID_VEC_ISA: Inductor's ISA probe failed where it was compiled), so its kernels are scalar code"
                );
            }
        }
        Ok(m)
    }

    /// The model's message for its last failure on this thread, with the shim's reason.
    fn model_error(&self) -> String {
        let mut text = String::new();
        if let Some(f) = self.last_error {
            let mut p: *const c_char = ptr::null();
            // SAFETY: f is the model's AOTInductorGetLastError (interface.h's signature),
            // which stores NULL or its thread-local NUL-terminated message in p.
            if unsafe { f(&mut p) } == 0 {
                if let Some(t) = error::c_string(p) {
                    text = t.trim().to_string();
                }
            }
        }
        let shim = error::c_string(error::last_error_ptr()).unwrap_or_default();
        match (text.is_empty(), shim.is_empty()) {
            (true, true) => "the model reported an error (see its message on stderr)".into(),
            (false, true) => text,
            (true, false) => shim,
            (false, false) => format!("{text} [last shim failure: {shim}]"),
        }
    }

    /// Checks the inputs (`spec::check`), and those the model writes: writable, and
    /// sharing no memory with another input.
    fn check_inputs(&self, ins: &[Tensor]) -> Result<()> {
        let w = match &self.specs {
            Ok(w) => w,
            Err(why) => {
                return err(
                    sys::TENSOR_ERR_INVALID_ARGUMENT,
                    format!(
                        "the model's inputs cannot be checked ({why}), so it is not run: load it from a package (or a .so beside its wrapper .cpp) whose input checks libtensor_aoti reads"
                    ),
                )
            }
        };
        spec::check(w, ins)?;
        for (i, x) in w.inputs.iter().enumerate() {
            if !x.mutated {
                continue;
            }
            let t = ins[i];
            // SAFETY: t is live (Tensor's invariant), so tensor_storage returns its live
            // storage, borrowed for this call.
            if unsafe { sys::storage_is_read_only(sys::tensor_storage(t.raw())) } {
                return err(
                    sys::TENSOR_ERR_READ_ONLY,
                    format!("input {i} is read-only and the model writes it (an in-place op on that input)"),
                );
            }
            let (lo, hi) = byte_range(t)?;
            for (j, &u) in ins.iter().enumerate() {
                if j == i {
                    continue;
                }
                let (a, b) = byte_range(u)?;
                if lo < b && a < hi {
                    return err(
                        sys::TENSOR_ERR_OVERLAP,
                        format!("the model writes input {i}, and input {j} shares memory with it"),
                    );
                }
            }
        }
        Ok(())
    }

    fn run(&self, inputs: &[Handle], outputs: &mut [Handle]) -> Result<()> {
        if inputs.len() != self.num_inputs {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!(
                    "n_inputs is {}, the model takes {}",
                    inputs.len(),
                    self.num_inputs
                ),
            );
        }
        if outputs.len() != self.num_outputs {
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!(
                    "n_outputs is {}, the model returns {}",
                    outputs.len(),
                    self.num_outputs
                ),
            );
        }
        let mut ins = Vec::with_capacity(inputs.len());
        for (i, &h) in inputs.iter().enumerate() {
            let t = util::handle(h, &format!("inputs[{i}]"))?;
            util::require_cpu(t, &format!("inputs[{i}]"))?;
            ins.push(t);
        }
        self.check_inputs(&ins)?;
        // The container steals its inputs: give it private aliases (its own TensorImpl over
        // the caller's storage, sharing its version counter), holding one more reference
        // to each, so that whether or not a failure happened before the steal, exactly the
        // references it did not release are dropped here.
        let mut aliases = Vec::with_capacity(ins.len());
        for t in &ins {
            aliases.push(t.alias()?);
        }
        let mut passed: Vec<Handle> = aliases
            .iter()
            .map(|a| a.get().retain().into_raw())
            .collect();
        let mut got: Vec<Handle> = vec![ptr::null_mut(); outputs.len()];
        error::set_last_error("");
        // SAFETY: run is the model's ContainerRun (interface.h's signature), on the live
        // container: `passed` holds num_inputs live handles, each one reference the container
        // takes over ("steals"), `got` num_outputs writable slots; no stream, no proxy
        // executor (both NULL: a model that needs one is refused at load).
        let rc = unsafe {
            (self.run)(
                self.container,
                passed.as_mut_ptr(),
                passed.len(),
                got.as_mut_ptr(),
                got.len(),
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        // SAFETY: a non-NULL output slot holds a reference the container handed over to its
        // caller (interface.h: output handles are the caller's to release), given up here.
        let got: Vec<Option<Owned>> = got.iter().map(|&h| unsafe { Owned::adopt(h) }).collect();
        if rc != 0 {
            drop(got);
            for a in &aliases {
                if a.get().use_count() > 1 {
                    // SAFETY: a count above the alias's own reference is the one `passed`
                    // gave the container, which it did not take over before failing: this
                    // releases that reference (not the alias's own, dropped with `aliases`).
                    unsafe { sys::tensor_release(a.get().raw()) }; // not stolen before the failure
                }
            }
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("the model failed: {}", self.model_error()),
            );
        }
        if let Some(i) = got.iter().position(|h| h.is_none()) {
            return err(
                sys::TENSOR_ERR_INTERNAL,
                format!("the model returned no tensor for output {i}"),
            );
        }
        // An input the model wrote has a new version, as after an in-place op.
        if let Ok(w) = &self.specs {
            for (x, t) in w.inputs.iter().zip(&ins) {
                if x.mutated {
                    // SAFETY: t is live (Tensor's invariant).
                    unsafe { sys::tensor_bump_version(t.raw()) };
                }
            }
        }
        for (o, g) in outputs.iter_mut().zip(got) {
            *o = g.map_or(ptr::null_mut(), Owned::into_raw);
        }
        Ok(())
    }
}

/// The bytes `[lo, hi)` a tensor's elements occupy.
fn byte_range(t: Tensor) -> Result<(usize, usize)> {
    let n = util::extent(t.sizes(), t.strides(), t.dtype())?;
    let item = util::itemsize(t.dtype()) as i64;
    let lo = t.data_ptr() as usize;
    let len = n.checked_mul(item).unwrap_or(i64::MAX) as usize;
    Ok((lo, lo.saturating_add(len)))
}

impl Drop for Model {
    fn drop(&mut self) {
        if !self.container.is_null() {
            // SAFETY: delete is the model's ContainerDelete (interface.h's signature) on the
            // container create made, deleted once, here, before `lib` is closed.
            unsafe { (self.delete)(self.container) };
        }
        // `lib` is closed next (a field), then the code file. (A model with thread-local
        // destructors pending stays mapped until those threads exit: glibc holds it.)
    }
}

/// Opaque handle: one loaded AOTInductor model, and the lock that makes one call at a time
/// use it.
#[allow(non_camel_case_types)]
pub struct tensor_aoti_model_t {
    model: Model,
    lock: Mutex<()>,
}

/// A model handle argument (NULL as None).
fn model<'a>(m: *const tensor_aoti_model_t) -> Option<&'a tensor_aoti_model_t> {
    // SAFETY: a non-NULL model handle argument is one tensor_aoti_load returned and not
    // yet released (tensor_aoti.h's contract), live for the call; it is only read through
    // shared references (the run's mutable state is behind its lock).
    unsafe { m.as_ref() }
}

/// Loads a `.pt2` package (its CPU model) or a model `.so` compiled by AOTInductor, in
/// `*out` (owned; `tensor_aoti_release` it). See include/tensor_aoti.h for what is checked
/// before the model's code runs.
#[no_mangle]
pub extern "C" fn tensor_aoti_load(
    path: *const c_char,
    out_model: *mut *mut tensor_aoti_model_t,
) -> sys::tensor_status_t {
    host(fn_name!(), || {
        if path.is_null() {
            return err(sys::TENSOR_ERR_NULL_POINTER, "path is NULL");
        }
        let o = out(out_model, "out")?;
        // SAFETY: path is non-NULL (checked above) and, by tensor_aoti.h's contract, a
        // NUL-terminated string live for the call.
        let p = unsafe { CStr::from_ptr(path) }
            .to_str()
            .map_err(|_| Error {
                status: sys::TENSOR_ERR_INVALID_ARGUMENT,
                msg: "path is not UTF-8".into(),
            })?;
        let model = Model::load(p)?;
        *o = Box::into_raw(Box::new(tensor_aoti_model_t {
            model,
            lock: Mutex::new(()),
        }));
        Ok(())
    })
}

/// Number of inputs the model takes (flattened in pytree order); 0 for NULL.
#[no_mangle]
pub extern "C" fn tensor_aoti_num_inputs(m: *const tensor_aoti_model_t) -> usize {
    host_value(0, || model(m).map_or(0, |m| m.model.num_inputs))
}

/// Number of outputs the model returns; 0 for NULL.
#[no_mangle]
pub extern "C" fn tensor_aoti_num_outputs(m: *const tensor_aoti_model_t) -> usize {
    host_value(0, || model(m).map_or(0, |m| m.model.num_outputs))
}

/// The package metadata's `AOTI_CPU_ISA` (e.g. "AVX2", "INVALID_VEC_ISA"); "" when unknown
/// or for NULL. Borrowed: valid while the model is.
#[no_mangle]
pub extern "C" fn tensor_aoti_cpu_isa(m: *const tensor_aoti_model_t) -> *const c_char {
    host_value(c"".as_ptr(), || {
        model(m).map_or(c"".as_ptr(), |m| m.model.cpu_isa.as_ptr())
    })
}

/// Whether runs of the model check their inputs (and so run at all): false when the
/// package gave nothing to check them against, and for NULL.
#[no_mangle]
pub extern "C" fn tensor_aoti_checks_inputs(m: *const tensor_aoti_model_t) -> bool {
    host_value(false, || model(m).is_some_and(|m| m.model.specs.is_ok()))
}

/// Runs the model. `inputs` are borrowed; on success `outputs[0..n_outputs]` receive owned
/// tensors (release each). A second call on the same model waits for the first. See
/// include/tensor_aoti.h for the checks and errors.
#[no_mangle]
pub extern "C" fn tensor_aoti_run(
    m: *mut tensor_aoti_model_t,
    inputs: *const *mut tensor_t,
    n_inputs: usize,
    outputs: *mut *mut tensor_t,
    n_outputs: usize,
) -> sys::tensor_status_t {
    host(fn_name!(), || {
        let Some(m) = model(m) else {
            return err(sys::TENSOR_ERR_NULL_POINTER, "model is NULL");
        };
        if inputs.is_null() && n_inputs > 0 {
            return err(
                sys::TENSOR_ERR_NULL_POINTER,
                format!("inputs is NULL with n_inputs {n_inputs}"),
            );
        }
        if outputs.is_null() && n_outputs > 0 {
            return err(
                sys::TENSOR_ERR_NULL_POINTER,
                format!("outputs is NULL with n_outputs {n_outputs}"),
            );
        }
        let ins = if n_inputs == 0 {
            &[][..]
        } else {
            // SAFETY: inputs is non-NULL with n_inputs > 0 (checked above); tensor_aoti.h:
            // it has n_inputs readable handles for the call.
            unsafe { std::slice::from_raw_parts(inputs, n_inputs) }
        };
        let outs = if n_outputs == 0 {
            &mut [][..]
        } else {
            // SAFETY: outputs is non-NULL with n_outputs > 0 (checked above); tensor_aoti.h:
            // it has n_outputs writable slots for the call, apart from inputs.
            unsafe { std::slice::from_raw_parts_mut(outputs, n_outputs) }
        };
        let guard = m.lock.lock().unwrap_or_else(|e| e.into_inner());
        let r = m.model.run(ins, outs);
        drop(guard);
        r
    })
}

/// Releases a model (its container, weights and workspace), after a run another thread
/// has going on it returns. NULL is a no-op.
#[no_mangle]
pub extern "C" fn tensor_aoti_release(m: *mut tensor_aoti_model_t) {
    host_value((), || {
        if let Some(r) = model(m) {
            // Wait for a running call (it holds the lock until it stops using the model).
            drop(r.lock.lock().unwrap_or_else(|e| e.into_inner()));
            // SAFETY: m is the Box tensor_aoti_load made (into_raw), which the caller gives
            // up here (tensor_aoti.h: release once, no call started after it); the running
            // call, if any, has released the lock and no longer uses it.
            drop(unsafe { Box::from_raw(m) });
        }
    })
}

/// This thread's message for its last failed `tensor_aoti_*` call (or the last failed
/// `aoti_torch_*` shim call), e.g. "tensor_aoti_run: input 0 has sizes [7, 16]: ..."; ""
/// if none yet. Borrowed: valid until this thread's next failure.
#[no_mangle]
pub extern "C" fn tensor_aoti_last_error() -> *const c_char {
    error::last_error_ptr()
}

#[cfg(test)]
mod tests {
    #[test]
    fn model_malloc_aligns_big_blocks_to_a_cache_line() {
        for n in [
            0,
            1,
            100,
            super::ALIGNED_MALLOC_MIN,
            1 << 20,
            (64 << 20) + 8,
        ] {
            let p = super::ltai_m(n);
            assert!(n == 0 || !p.is_null(), "ltai_m({n}) failed");
            if n >= super::ALIGNED_MALLOC_MIN {
                assert_eq!(p as usize % 64, 0, "ltai_m({n}) = {p:?}");
            }
            // SAFETY: p is n writable bytes from ltai_m (malloc / posix_memalign), freed once.
            unsafe {
                std::ptr::write_bytes(p.cast::<u8>(), 7, n);
                libc::free(p);
            }
        }
        // Too big: NULL and ENOMEM, as malloc.
        assert!(super::ltai_m(usize::MAX - 4096).is_null());
        // SAFETY: this thread's errno.
        assert_eq!(unsafe { *libc::__errno_location() }, libc::ENOMEM);
    }
}
