//! `celerity_host_object` and `celerity_collective_group`.

use std::ffi::c_void;

use super::boundary::{self, OutPtr};
use super::handle::{self, HandleKind, Registry};
use super::runtime_slot::with_runtime;
use super::status::{CELERITY_OK, celerity_status};
use crate::error::Result;
use crate::types::{CollectiveGroupId, HostObjectId};

/// A host object (opaque): an instance that host tasks access through side effects, serialised
/// per object. Thread: the runtime's thread only.
pub struct celerity_host_object {
    _opaque: [u8; 0],
}

/// A collective group (opaque): collective host tasks of one group are serialised and get their
/// own MPI communicator. Thread: the runtime's thread only.
pub struct celerity_collective_group {
    _opaque: [u8; 0],
}

static HOST_OBJECTS: Registry<HostObjectId> = Registry::new(HandleKind::HostObject);
static GROUPS: Registry<CollectiveGroupId> = Registry::new(HandleKind::CollectiveGroup);

/// Invalidates the handles of host objects and collective groups the program never released (at
/// shutdown); returns how many of each there were.
pub(crate) fn take_unreleased() -> (usize, usize) {
    (HOST_OBJECTS.take_all().len(), GROUPS.take_all().len())
}

/// The host object behind handle argument `argument`.
pub(crate) fn lookup_host_object(
    obj: *const celerity_host_object,
    argument: &str,
) -> Result<HostObjectId> {
    HOST_OBJECTS
        .get(handle::from_ptr(obj), argument)
        .map(|id| *id)
}

/// The collective group behind handle argument `argument`.
pub(crate) fn lookup_group(
    group: *const celerity_collective_group,
    argument: &str,
) -> Result<CollectiveGroupId> {
    GROUPS.get(handle::from_ptr(group), argument).map(|id| *id)
}

/// An instance pointer handed to the executor thread.
struct Instance(*mut c_void);
// SAFETY: the program hands the instance to the runtime, which only passes it to host tasks
// (serialised by side effects) and to `destroy`, once, after the last of them.
unsafe impl Send for Instance {}

/// Registers `instance` as a host object. `destroy(instance)` (nullable) runs exactly once, on a
/// runtime thread, after the object's last side effect once it was released (or at shutdown).
///
/// Ownership: the caller owns `*out` and releases it with `celerity_host_object_release`.
/// Errors: `out` NULL → `CELERITY_ERROR_INVALID_ARGUMENT`; not running, wrong thread →
/// `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_host_object_create(
    instance: *mut c_void,
    destroy: Option<unsafe extern "C" fn(instance: *mut c_void)>,
    out: *mut *mut celerity_host_object,
) -> celerity_status {
    boundary::call("celerity_host_object_create", || {
        let out = OutPtr::new(out, "out")?;
        let owned = Instance(instance);
        let destroy: Option<Box<dyn FnOnce() + Send>> = destroy.map(|destroy| {
            Box::new(move || {
                let owned = owned;
                // SAFETY: the program's destroy callback, called once with its own instance.
                unsafe { destroy(owned.0) }
            }) as Box<dyn FnOnce() + Send>
        });
        let id = with_runtime(|rt| rt.create_host_object(instance as usize, destroy))?;
        out.write(handle::to_ptr(HOST_OBJECTS.insert(id)?));
        Ok(())
    })
}

/// Releases the host object; its destroy callback runs after its last side effect. NULL is
/// ignored.
///
/// Errors: released or forged handle → `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_host_object_release(obj: *mut celerity_host_object) -> celerity_status {
    if obj.is_null() {
        return CELERITY_OK;
    }
    boundary::call("celerity_host_object_release", || {
        let id = lookup_host_object(obj, "obj")?;
        with_runtime(|rt| rt.release_host_object(id))?;
        HOST_OBJECTS.remove(handle::from_ptr(obj), "obj").map(drop)
    })
}

/// Creates a collective group. Every process must create its groups in the same order.
///
/// Errors: `out` NULL → `CELERITY_ERROR_INVALID_ARGUMENT`; not running, wrong thread →
/// `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_collective_group_create(
    out: *mut *mut celerity_collective_group,
) -> celerity_status {
    boundary::call("celerity_collective_group_create", || {
        let out = OutPtr::new(out, "out")?;
        let id = with_runtime(|rt| rt.create_collective_group())?;
        out.write(handle::to_ptr(GROUPS.insert(id)?));
        Ok(())
    })
}

/// Releases a collective group handle (tasks already submitted keep their group). NULL is
/// ignored.
///
/// Errors: released or forged handle → `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_collective_group_release(
    group: *mut celerity_collective_group,
) -> celerity_status {
    if group.is_null() {
        return CELERITY_OK;
    }
    boundary::call("celerity_collective_group_release", || {
        with_runtime(|_| Ok(()))?;
        GROUPS.remove(handle::from_ptr(group), "group").map(drop)
    })
}
