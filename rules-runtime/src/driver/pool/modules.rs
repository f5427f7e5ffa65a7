//! The runtime's kernels, loaded into each context by the cache: the shadow kernels of
//! `shadow.ptx` ([`kernels`]) and the checked mode's compare kernels of `check.ptx`
//! ([`check_kernels`]), with the names they are looked up by. The PTX is built from the `.cu`
//! files beside it in `device/` by `device/regen.sh`; the driver JIT-compiles it, so no CUDA
//! toolkit is needed at run time.

use super::{CurrentContext, entries, entry};
use crate::driver::driver;
use crate::error::Result;
use cudarc::driver::{CudaContext, result, sys};
use std::sync::{Arc, Weak};

/// The PTX of `shadow.cu`.
pub(crate) const PTX: &str = include_str!("../../device/shadow.ptx");

/// The real element types the shadow kernels are instantiated for, in kernel-table order.
pub(crate) const REALS: [&str; 4] = ["f32", "f64", "f16", "bf16"];

/// The element types of the sum kernels (the reals, then complex of f32 and f64), in
/// kernel-table order.
pub(crate) const SUMS: [&str; 6] = ["f32", "f64", "f16", "bf16", "c32", "c64"];

/// The PTX of `check.cu`; empty without the `checked` feature, which never loads it.
#[cfg(feature = "checked")]
pub(crate) const CHECK_PTX: &str = include_str!("../../device/check.ptx");
#[cfg(not(feature = "checked"))]
pub(crate) const CHECK_PTX: &str = "";

/// The checked mode's compare kernels, by element size.
pub(crate) const CHECK_KERNELS: [&str; 4] = ["check_b2", "check_b4", "check_b8", "check_b16"];

/// The kernels of `shadow.ptx`, loaded into one context (the module belongs to the context and
/// goes with it).
#[derive(Clone, Copy)]
pub(crate) struct Kernels {
    /// `accumulate_*`, indexed like [`REALS`].
    pub(crate) accumulate: [sys::CUfunction; 4],
    /// `accumulate_and_zero_*`, indexed likewise.
    pub(crate) fused: [sys::CUfunction; 4],
    /// `zero_streaming`.
    pub(crate) zero_streaming: sys::CUfunction,
    /// `empty_kernel`: the benchmarks' launch ceiling (`testing::kernels::empty_launch`).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub(crate) empty: sys::CUfunction,
    /// `region_accumulate_*` (scalar) and `region_accumulate_v_*` (16-byte vectors), indexed
    /// like [`REALS`].
    pub(crate) region: [[sys::CUfunction; 4]; 2],
    /// `region_fill_b2`, `_b4`, `_b8`, `_b16`.
    pub(crate) fill: [sys::CUfunction; 4],
    /// `region_sum_*` and `region_sum_narrow_*`, indexed like [`SUMS`], and
    /// `region_sum_finish`.
    pub(crate) sum: [sys::CUfunction; 6],
    pub(crate) sum_narrow: [sys::CUfunction; 6],
    pub(crate) sum_finish: sys::CUfunction,
    /// `region_sum_add_*`, indexed like [`SUMS`].
    pub(crate) sum_add: [sys::CUfunction; 6],
    /// `surface_zero_b2`, `_b4`, `_b8`, `_b16`.
    pub(crate) surface_zero: [sys::CUfunction; 4],
    /// `array_pass_*` (elements) and `array_pass_w_*` (16-byte words), indexed like
    /// [`SUMS`].
    pub(crate) array_pass: [[sys::CUfunction; 6]; 2],
}

// SAFETY: module and function handles are plain driver handles, usable from any thread on which
// their context is current; they stay valid while the entry (which holds the context) exists.
unsafe impl Send for Kernels {}

/// The checked mode's compare kernels (`check.ptx`, `CHECK_KERNELS`), loaded into one
/// context on its first compare; the module goes with the context, as the shadow kernels' does.
#[derive(Clone, Copy)]
pub(crate) struct CheckKernels(pub(crate) [sys::CUfunction; 4]);

// SAFETY: as for `Kernels`.
unsafe impl Send for CheckKernels {}
/// The shadow kernels of `ctx`, loading them on first use.
///
/// The module is loaded without the cache's lock: a load waits for the context's work in flight,
/// and must not hold up other threads' work on other contexts meanwhile. Two threads that load
/// into one context at once each load a module; the first stored is used, the other stays in the
/// context until it is destroyed.
pub(crate) fn kernels(ctx: &Arc<CudaContext>) -> Result<Kernels> {
    // Every launch asks: the last context this thread asked for answers without the lock.
    let same = |(w, _): &&(Weak<CudaContext>, Kernels)| core::ptr::eq(w.as_ptr(), Arc::as_ptr(ctx));
    if let Some(k) = LAST_KERNELS.with(|l| l.borrow().as_ref().filter(same).map(|(_, k)| *k)) {
        return Ok(k);
    }
    let k = kernels_locked(ctx)?;
    LAST_KERNELS.with(|l| *l.borrow_mut() = Some((Arc::downgrade(ctx), k)));
    Ok(k)
}

thread_local! {
    /// The context object this thread last launched on, and its kernels. The `Weak` keeps the
    /// object's allocation, so no other context object can be at its address meanwhile: an `Arc`
    /// at that address is this object, alive, and its module (never unloaded while the context
    /// lives) holds these functions.
    static LAST_KERNELS: core::cell::RefCell<Option<(Weak<CudaContext>, Kernels)>> =
        const { core::cell::RefCell::new(None) };
}

/// [`kernels`] through the cache's entry.
fn kernels_locked(ctx: &Arc<CudaContext>) -> Result<Kernels> {
    if let Some(k) = entry(&mut entries(), ctx).kernels {
        return Ok(k);
    }
    let loaded = {
        let _current = CurrentContext::save();
        load(ctx)?
    };
    let mut all = entries();
    Ok(*entry(&mut all, ctx).kernels.get_or_insert(loaded))
}

/// The checked mode's compare kernels of `ctx`, loading them on its first compare (without the
/// cache's lock, as [`kernels`]).
pub(crate) fn check_kernels(ctx: &Arc<CudaContext>) -> Result<[sys::CUfunction; 4]> {
    if let Some(k) = entry(&mut entries(), ctx).checks {
        return Ok(k.0);
    }
    let loaded = {
        let _current = CurrentContext::save();
        ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        let module = load_module(CHECK_PTX)?;
        let mut f = [core::ptr::null_mut(); 4];
        for (i, name) in CHECK_KERNELS.iter().enumerate() {
            f[i] = function(module, name)?;
        }
        CheckKernels(f)
    };
    let mut all = entries();
    Ok(entry(&mut all, ctx).checks.get_or_insert(loaded).0)
}

/// Loads a PTX image into the current context.
fn load_module(ptx: &str) -> Result<sys::CUmodule> {
    let ptx = std::ffi::CString::new(ptx).expect("the PTX has no NUL byte");
    // SAFETY: `ptx` is a NUL-terminated PTX image.
    unsafe { result::module::load_data(ptx.as_ptr().cast()) }
        .map_err(driver("cuModuleLoadData (runtime kernels)"))
}

/// The function `name` of `module`, loaded now (see [`load`] for why).
fn function(module: sys::CUmodule, name: &str) -> Result<sys::CUfunction> {
    let name = std::ffi::CString::new(name).expect("kernel names have no NUL byte");
    // SAFETY: `module` is loaded in the current context; the function exists once
    // `get_function` returns it.
    unsafe {
        let f =
            result::module::get_function(module, name).map_err(driver("cuModuleGetFunction"))?;
        result::function::get_function_attribute(
            f,
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        )
        .map_err(driver("cuFuncGetAttribute (loading a kernel)"))?;
        Ok(f)
    }
}

fn load(ctx: &Arc<CudaContext>) -> Result<Kernels> {
    use std::ffi::CString;
    ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
    let ptx = CString::new(PTX).expect("the PTX has no NUL byte");
    // SAFETY: `ptx` is a NUL-terminated PTX image.
    let module = unsafe { result::module::load_data(ptx.as_ptr().cast()) }
        .map_err(driver("cuModuleLoadData (shadow kernels)"))?;
    // Every function is loaded now, not at its first launch: under CUDA's lazy loading (the
    // default since CUDA 12.2) a first launch loads the function, which can wait for the context's
    // work in flight, so a call that should only enqueue would block the host behind earlier work
    // on its stream. Asking for an attribute makes the driver load the function.
    let function = |name: String| {
        let name = CString::new(name).expect("kernel names have no NUL byte");
        // SAFETY: `module` was just loaded; the function exists once `get_function` returns it.
        unsafe {
            let f = result::module::get_function(module, name)
                .map_err(driver("cuModuleGetFunction"))?;
            result::function::get_function_attribute(
                f,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            )
            .map_err(driver("cuFuncGetAttribute (loading a shadow kernel)"))?;
            Ok::<_, crate::error::Error>(f)
        }
    };
    let mut accumulate = [core::ptr::null_mut(); 4];
    let mut fused = [core::ptr::null_mut(); 4];
    for (i, name) in REALS.iter().enumerate() {
        accumulate[i] = function(format!("accumulate_{name}"))?;
        fused[i] = function(format!("accumulate_and_zero_{name}"))?;
    }
    let zero_streaming = function("zero_streaming".into())?;
    let empty = function("empty_kernel".into())?;
    let mut region = [[core::ptr::null_mut(); 4]; 2];
    for (i, name) in REALS.iter().enumerate() {
        region[0][i] = function(format!("region_accumulate_{name}"))?;
        region[1][i] = function(format!("region_accumulate_v_{name}"))?;
    }
    let mut fill = [core::ptr::null_mut(); 4];
    let mut surface_zero = [core::ptr::null_mut(); 4];
    for (i, bytes) in [2, 4, 8, 16].iter().enumerate() {
        fill[i] = function(format!("region_fill_b{bytes}"))?;
        surface_zero[i] = function(format!("surface_zero_b{bytes}"))?;
    }
    let mut sum = [core::ptr::null_mut(); 6];
    let mut sum_narrow = [core::ptr::null_mut(); 6];
    for (i, name) in SUMS.iter().enumerate() {
        sum[i] = function(format!("region_sum_{name}"))?;
        sum_narrow[i] = function(format!("region_sum_narrow_{name}"))?;
    }
    let sum_finish = function("region_sum_finish".into())?;
    let mut sum_add = [core::ptr::null_mut(); 6];
    let mut array_pass = [[core::ptr::null_mut(); 6]; 2];
    for (i, name) in SUMS.iter().enumerate() {
        sum_add[i] = function(format!("region_sum_add_{name}"))?;
        array_pass[0][i] = function(format!("array_pass_{name}"))?;
        array_pass[1][i] = function(format!("array_pass_w_{name}"))?;
    }
    Ok(Kernels {
        accumulate,
        fused,
        zero_streaming,
        empty,
        region,
        fill,
        sum,
        sum_narrow,
        sum_finish,
        sum_add,
        surface_zero,
        array_pass,
    })
}
