//! `celerity_config`: a set of configuration keys handed to `celerity_runtime_init`.

use std::ffi::c_char;

use parking_lot::Mutex;

use super::boundary::{self, OutPtr};
use super::handle::{self, HandleKind, Registry};
use super::status::celerity_status;
use crate::error::Result;
use crate::runtime::config::ConfigBuilder;

/// A runtime configuration being assembled (opaque).
///
/// Created by `celerity_config_create`, filled with `celerity_config_set`, read by
/// `celerity_runtime_init` (which copies it) and freed with `celerity_config_destroy`.
/// Thread: usable from any thread, but not concurrently from two.
pub struct celerity_config {
    _opaque: [u8; 0],
}

static CONFIGS: Registry<Mutex<ConfigBuilder>> = Registry::new(HandleKind::Config);

/// The keys set so far on the configuration passed as argument `argument`.
pub(crate) fn snapshot(cfg: *const celerity_config, argument: &str) -> Result<ConfigBuilder> {
    Ok(CONFIGS.get(handle::from_ptr(cfg), argument)?.lock().clone())
}

/// Creates an empty configuration: every key takes its value from the environment or its
/// default (see the configuration table in the README).
///
/// Ownership: the caller owns `*out` and frees it with `celerity_config_destroy`.
/// Thread: any thread. Errors: `out` NULL → `CELERITY_ERROR_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_config_create(out: *mut *mut celerity_config) -> celerity_status {
    boundary::call("celerity_config_create", || {
        let out = OutPtr::new(out, "out")?;
        let bits = CONFIGS.insert(Mutex::new(ConfigBuilder::default()))?;
        out.write(handle::to_ptr(bits));
        Ok(())
    })
}

/// Sets configuration `key` to `value` (both NUL-terminated strings, copied). A key set here
/// wins over its `CELERITY_*` environment variable.
///
/// Thread: any thread. Errors: `cfg`, `key` or `value` NULL, an unknown key or a malformed
/// value → `CELERITY_ERROR_INVALID_ARGUMENT` (the message lists the valid choices; the
/// configuration is unchanged); a destroyed or forged `cfg` → `CELERITY_ERROR_INVALID_STATE`.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_config_set(
    cfg: *mut celerity_config,
    key: *const c_char,
    value: *const c_char,
) -> celerity_status {
    boundary::call("celerity_config_set", || {
        let config = CONFIGS.get(handle::from_ptr(cfg), "cfg")?;
        let key = boundary::str_arg(key, "key")?;
        let value = boundary::str_arg(value, "value")?;
        config.lock().set(key, value)
    })
}

/// Frees a configuration. NULL is accepted and ignored. Destroying a configuration twice is
/// reported through `celerity_last_error_message` (status `CELERITY_ERROR_INVALID_STATE`) and
/// otherwise ignored.
///
/// Thread: any thread.
#[unsafe(no_mangle)]
pub extern "C" fn celerity_config_destroy(cfg: *mut celerity_config) {
    if cfg.is_null() {
        return;
    }
    boundary::call_void("celerity_config_destroy", || {
        CONFIGS.remove(handle::from_ptr(cfg), "cfg").map(drop)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::status::*;

    #[test]
    fn create_set_snapshot_destroy() {
        let mut cfg: *mut celerity_config = std::ptr::null_mut();
        assert_eq!(celerity_config_create(&mut cfg), CELERITY_OK);
        assert_eq!(
            celerity_config_set(cfg, c"horizon_step".as_ptr(), c"2".as_ptr()),
            CELERITY_OK
        );
        assert_eq!(
            celerity_config_set(cfg, c"horizon_step".as_ptr(), c"zero".as_ptr()),
            CELERITY_ERROR_INVALID_ARGUMENT
        );
        let (config, _) = snapshot(cfg, "cfg").unwrap().build(Vec::new()).unwrap();
        assert_eq!(config.horizon_step, 2);
        celerity_config_destroy(cfg);
        assert_eq!(
            celerity_config_set(cfg, c"horizon_step".as_ptr(), c"2".as_ptr()),
            CELERITY_ERROR_INVALID_STATE
        );
        assert_eq!(
            celerity_config_create(std::ptr::null_mut()),
            CELERITY_ERROR_INVALID_ARGUMENT
        );
    }
}
