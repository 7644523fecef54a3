//! The host API: load a `.pt2` package (or a model `.so`), run it on libtensor tensors.
//!
//! A `.pt2` is a zip (entries stored); its CPU model is
//! `<package>/data/aotinductor/<model>/<hash>.wrapper.so` with `AOTI_DEVICE_KEY: cpu` in the
//! `.wrapper_metadata.json` beside it. The `.so` is copied into a temporary file (unlinked once
//! open) and `dlopen`ed from there with `RTLD_NOW` (every `aoti_torch_*` and `Sleef_*` reference must
//! resolve: libtensor_aoti first makes its own symbols global). The entry points
//! (`AOTInductorModelContainer*`) are `extern "C"` in the model itself.

use std::ffi::{c_char, c_void, CStr, CString};
use std::io::Read;
use std::ptr::{self, NonNull};

use crate::error::{self, err, fn_name, host, host_value, Result};
use crate::spec::{self, InputSpec};
use crate::sys::{self, tensor_t};
use crate::util::{self, out, Handle, Owned};

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
    /// `dlopen(path, RTLD_NOW | RTLD_LOCAL)`, or IO with dlerror's text naming `what`.
    fn open(path: &CStr, what: &str) -> Result<Library> {
        // SAFETY: path is a NUL-terminated string. dlopen runs the library's initialisers:
        // running that code is what the host asked for (tensor_aoti_load's contract: the
        // file is a model compiled by AOTInductor).
        let lib = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        match NonNull::new(lib) {
            Some(l) => Ok(Library(l)),
            None => err(
                sys::TENSOR_ERR_IO,
                format!("dlopen of {what}: {}", dlerror()),
            ),
        }
    }

    /// The address of `name` in the library, if it defines it.
    fn sym(&self, name: &str) -> Option<NonNull<c_void>> {
        let c = CString::new(name).ok()?;
        // SAFETY: self.0 is a handle dlopen returned and not yet closed (closed only by
        // Drop); c is a NUL-terminated string.
        NonNull::new(unsafe { libc::dlsym(self.0.as_ptr(), c.as_ptr()) })
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

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: self.0 is a handle dlopen returned, closed exactly once, here; nothing
        // uses the library's code or data afterwards (Model drops its container first).
        unsafe { libc::dlclose(self.0.as_ptr()) };
    }
}

/// A loaded model (`tensor_aoti_model_t`).
pub struct Model {
    /// Held open (a field: closed after `Model::drop` has deleted the container).
    _lib: Library,
    container: ContainerHandle,
    run: RunFn,
    delete: DeleteFn,
    last_error: Option<LastErrorFn>,
    num_inputs: usize,
    num_outputs: usize,
    /// Per input, from the package's wrapper source; None for a bare `.so`.
    specs: Option<Vec<InputSpec>>,
}

fn dlerror() -> String {
    // SAFETY: dlerror takes nothing; it returns NULL or this thread's NUL-terminated
    // message, valid until the thread's next dl* call (c_string copies it at once).
    error::c_string(unsafe { libc::dlerror() }).unwrap_or_else(|| "unknown dlerror".into())
}

/// Makes libtensor_aoti's symbols global, so that a model `dlopen`ed next binds its
/// `aoti_torch_*` references to them even when the host loaded us with RTLD_LOCAL (ctypes).
fn promote_self() -> Result<()> {
    // SAFETY: Dl_info is C data (pointers and integers), for which all zeros is a value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let anchor = promote_self as *const c_void;
    // SAFETY: anchor is an address in this library; info is a writable Dl_info.
    if unsafe { libc::dladdr(anchor, &mut info) } == 0 || info.dli_fname.is_null() {
        return err(
            sys::TENSOR_ERR_INTERNAL,
            "dladdr cannot find libtensor_aoti itself",
        );
    }
    // SAFETY: dli_fname is non-NULL (checked above): the loader's NUL-terminated path of
    // this library, already loaded, so RTLD_NOLOAD opens no new code.
    let h = unsafe {
        libc::dlopen(
            info.dli_fname,
            libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_GLOBAL,
        )
    };
    if h.is_null() {
        return err(
            sys::TENSOR_ERR_INTERNAL,
            format!("cannot make libtensor_aoti global: {}", dlerror()),
        );
    }
    // Keeps the count as it was (NOLOAD added one reference).
    // SAFETY: h is the non-NULL handle dlopen just returned, closed once; the library
    // stays loaded (it is this code, and the host holds its own reference).
    unsafe { libc::dlclose(h) };
    Ok(())
}

/// The model's own input checks (`AOTI_RUNTIME_CHECK_INPUTS`, read once per model `.so` at
/// its first run): on unless the environment says otherwise. Set once, at the first load.
fn enable_model_checks() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("AOTI_RUNTIME_CHECK_INPUTS").is_none() {
            // SAFETY: both are NUL-terminated strings. setenv must not race with another
            // thread's getenv/setenv: this runs once (ONCE), inside the first
            // tensor_aoti_load, during which tensor_aoti.h asks the host not to read or
            // change the environment on other threads.
            unsafe { libc::setenv(c"AOTI_RUNTIME_CHECK_INPUTS".as_ptr(), c"1".as_ptr(), 0) };
        }
    });
}

/// The CPU model of a `.pt2`: (its `.so` bytes, its wrapper source if shipped).
fn read_package(path: &str) -> Result<(Vec<u8>, Option<String>)> {
    let io = |e: &dyn std::fmt::Display| error::Error {
        status: sys::TENSOR_ERR_IO,
        msg: format!("'{path}': {e}"),
    };
    let f = std::fs::File::open(path).map_err(|e| io(&e))?;
    let mut zip =
        zip::ZipArchive::new(f).map_err(|e| io(&format!("not a .pt2 package (zip): {e}")))?;
    let names: Vec<String> = zip.file_names().map(str::to_string).collect();
    let mut sos: Vec<&String> = names
        .iter()
        .filter(|n| n.contains("/data/aotinductor/") && n.ends_with(".wrapper.so"))
        .collect();
    sos.sort();
    // CPU models only: the metadata beside the .so says which device it was compiled for.
    let mut chosen = None;
    let mut seen = Vec::new();
    for so in sos {
        let meta = so.trim_end_matches(".so").to_string() + "_metadata.json";
        let device = match zip.by_name(&meta) {
            Ok(mut m) => {
                let mut s = String::new();
                m.read_to_string(&mut s).map_err(|e| io(&e))?;
                if s.contains("\"AOTI_DEVICE_KEY\": \"cpu\"")
                    || s.contains("\"AOTI_DEVICE_KEY\":\"cpu\"")
                {
                    "cpu".to_string()
                } else {
                    s
                }
            }
            Err(_) => "cpu".to_string(), // no metadata: older packages were CPU or said so elsewhere
        };
        if device == "cpu" {
            // Prefer the default model name, "model".
            if chosen.is_none() || so.contains("/data/aotinductor/model/") {
                chosen = Some(so.clone());
            }
        } else {
            seen.push(format!("{so} ({device})"));
        }
    }
    let Some(so) = chosen else {
        return err(
            sys::TENSOR_ERR_INVALID_ARGUMENT,
            format!("'{path}' holds no CPU model (<name>/data/aotinductor/<model>/*.wrapper.so); found: [{}]", seen.join(", ")),
        );
    };
    let mut bytes = Vec::new();
    {
        let mut e = zip.by_name(&so).map_err(|e| io(&e))?;
        if e.compression() != zip::CompressionMethod::Stored {
            return err(
                sys::TENSOR_ERR_IO,
                format!(
                    "'{path}': entry {so} is compressed ({:?}); torch stores them uncompressed",
                    e.compression()
                ),
            );
        }
        e.read_to_end(&mut bytes).map_err(|e| io(&e))?;
    }
    let cpp = so.trim_end_matches(".so").to_string() + ".cpp";
    let src = match zip.by_name(&cpp) {
        Ok(mut e) => {
            let mut s = String::new();
            e.read_to_string(&mut s).ok().map(|_| s)
        }
        Err(_) => None,
    };
    Ok((bytes, src))
}

/// `dlopen` of `bytes`: written to a temporary file whose name no other load of this
/// process uses (dlopen returns an already loaded library of the same name), opened, and
/// unlinked at once.
fn dlopen_bytes(bytes: &[u8], what: &str) -> Result<Library> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("tensor_aoti-{}-{n}.so", std::process::id()));
    let io = |e: std::io::Error| error::Error {
        status: sys::TENSOR_ERR_IO,
        msg: format!("writing {what} to {}: {e}", path.display()),
    };
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io)?;
        if let Err(e) = f.write_all(bytes) {
            let _ = std::fs::remove_file(&path);
            return Err(io(e));
        }
    }
    let c = CString::new(path.to_string_lossy().as_bytes()).unwrap();
    let lib = Library::open(&c, what);
    let _ = std::fs::remove_file(&path);
    lib
}

impl Model {
    fn load(path: &str) -> Result<Model> {
        promote_self()?;
        enable_model_checks();
        let mut magic = [0u8; 4];
        std::fs::File::open(path)
            .and_then(|mut f| f.read_exact(&mut magic))
            .map_err(|e| error::Error {
                status: sys::TENSOR_ERR_IO,
                msg: format!("'{path}': {e}"),
            })?;
        let (lib, src) = if magic == *b"\x7fELF" {
            let c = CString::new(path).unwrap();
            let lib = Library::open(&c, &format!("'{path}'"))?;
            // A model .so next to its wrapper source (an unpacked package) gets its specs.
            let cpp = path.strip_suffix(".so").map(|p| format!("{p}.cpp"));
            (lib, cpp.and_then(|c| std::fs::read_to_string(c).ok()))
        } else {
            let (bytes, src) = read_package(path)?;
            (
                dlopen_bytes(&bytes, &format!("the model of '{path}'"))?,
                src,
            )
        };
        let missing = |name: &str| error::Error {
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
        let mut m = Model {
            _lib: lib,
            container: ptr::null_mut(),
            run,
            delete,
            last_error,
            num_inputs: 0,
            num_outputs: 0,
            specs: None,
        };
        // SAFETY: create is the model's CreateWithDevice (interface.h's signature): an
        // out-parameter for the container, 1 model, the device string "cpu" and no cubin
        // directory (NULL is allowed).
        let rc = unsafe { create(&mut m.container, 1, c"cpu".as_ptr(), ptr::null()) };
        if rc != 0 || m.container.is_null() {
            let why = m.model_error();
            m.container = ptr::null_mut();
            return err(
                sys::TENSOR_ERR_INVALID_ARGUMENT,
                format!("creating the model of '{path}' failed: {why}"),
            );
        }
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
        m.specs = src.and_then(|s| spec::parse(&s, m.num_inputs));
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

    fn run(&mut self, inputs: &[Handle], outputs: &mut [Handle]) -> Result<()> {
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
            if let Some(specs) = &self.specs {
                spec::check(i, t, &specs[i])?;
            }
            ins.push(t);
        }
        // The container steals its inputs: give it private aliases (its own TensorImpl over
        // the caller's storage), holding one more reference to each, so that whether or not
        // a failure happened before the steal, exactly the references it did not release
        // are dropped here.
        let mut aliases = Vec::with_capacity(ins.len());
        for t in ins {
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
        // executor (both NULL: a CPU model without custom ops needs neither).
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
        for (o, g) in outputs.iter_mut().zip(got) {
            *o = g.map_or(ptr::null_mut(), Owned::into_raw);
        }
        Ok(())
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        if !self.container.is_null() {
            // SAFETY: delete is the model's ContainerDelete (interface.h's signature) on the
            // container create made, deleted once, here, before `lib` is closed.
            unsafe { (self.delete)(self.container) };
        }
        // `lib` is closed next (a field). (A model with thread-local destructors pending
        // stays mapped until those threads exit: glibc holds it.)
    }
}

/// Opaque handle: one loaded AOTInductor model (its container and library).
#[allow(non_camel_case_types)]
pub struct tensor_aoti_model_t(Model);

/// A model handle argument (NULL as None).
fn model<'a>(m: *const tensor_aoti_model_t) -> Option<&'a Model> {
    // SAFETY: a non-NULL model handle argument is one tensor_aoti_load returned and not
    // yet released, live for the call, and used by one call at a time (tensor_aoti.h's
    // contract), so no `&mut` to it (tensor_aoti_run's) exists while this one is read.
    unsafe { m.as_ref() }.map(|m| &m.0)
}

/// Loads a `.pt2` package (its CPU model) or a model `.so` compiled by AOTInductor, in
/// `*out` (owned; `tensor_aoti_release` it). Errors: NULL_POINTER, IO (unreadable file,
/// not a zip, dlopen failed, e.g. an unresolved symbol), INVALID_ARGUMENT (no CPU model in
/// the package, not an AOTInductor model, its container could not be created).
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
            .map_err(|_| error::Error {
                status: sys::TENSOR_ERR_INVALID_ARGUMENT,
                msg: "path is not UTF-8".into(),
            })?;
        let m = Model::load(p)?;
        *o = Box::into_raw(Box::new(tensor_aoti_model_t(m)));
        Ok(())
    })
}

/// Number of inputs the model takes (flattened in pytree order); 0 for NULL.
#[no_mangle]
pub extern "C" fn tensor_aoti_num_inputs(m: *const tensor_aoti_model_t) -> usize {
    host_value(0, || model(m).map_or(0, |m| m.num_inputs))
}

/// Number of outputs the model returns; 0 for NULL.
#[no_mangle]
pub extern "C" fn tensor_aoti_num_outputs(m: *const tensor_aoti_model_t) -> usize {
    host_value(0, || model(m).map_or(0, |m| m.num_outputs))
}

/// Runs the model. `inputs` are borrowed (the model sees aliases of them and may read
/// them, never resize them); on success `outputs[0..n_outputs]` receive owned tensors
/// (release each). Each input is checked first against what the model was compiled for:
/// the count, CPU, and (for a `.pt2`, from its wrapper source) dtype, rank, static sizes,
/// dynamic-size bounds and strides; the model's own checks run as well. On failure
/// `outputs` are left untouched. Errors: NULL_POINTER, INVALID_ARGUMENT (wrong counts, or
/// the model failed: the message carries its text and the shim's reason), DEVICE, DTYPE,
/// SHAPE (sizes or strides the model was not compiled for).
#[no_mangle]
pub extern "C" fn tensor_aoti_run(
    m: *mut tensor_aoti_model_t,
    inputs: *const *mut tensor_t,
    n_inputs: usize,
    outputs: *mut *mut tensor_t,
    n_outputs: usize,
) -> sys::tensor_status_t {
    host(fn_name!(), || {
        if m.is_null() {
            return err(sys::TENSOR_ERR_NULL_POINTER, "model is NULL");
        }
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
        // SAFETY: m is non-NULL (checked above): a model tensor_aoti_load returned, not yet
        // released, and used by one call at a time (tensor_aoti.h's contract), so this is
        // the only reference to it during the call.
        unsafe { &mut *m }.0.run(ins, outs)
    })
}

/// Releases a model (its container, weights and workspace). NULL is a no-op.
#[no_mangle]
pub extern "C" fn tensor_aoti_release(m: *mut tensor_aoti_model_t) {
    host_value((), || {
        if !m.is_null() {
            // SAFETY: m is the Box tensor_aoti_load made (into_raw), which the caller gives
            // up here (tensor_aoti.h: release once, no use after).
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
