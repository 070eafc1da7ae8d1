//! Names of CUDA runtime API error codes (`cudaError_t`), for messages about kernel functions
//! that return one (`return cudaGetLastError();` after a launch). The library loads only the
//! driver API, whose codes differ, so the runtime API's documented values are listed here.

/// The name of `cudaError_t` value `code`, if it is one.
pub fn cuda_runtime_error_name(code: i32) -> Option<&'static str> {
    Some(match code {
        1 => "cudaErrorInvalidValue",
        2 => "cudaErrorMemoryAllocation",
        3 => "cudaErrorInitializationError",
        4 => "cudaErrorCudartUnloading",
        9 => "cudaErrorInvalidConfiguration",
        12 => "cudaErrorInvalidPitchValue",
        13 => "cudaErrorInvalidSymbol",
        16 => "cudaErrorInvalidHostPointer",
        17 => "cudaErrorInvalidDevicePointer",
        35 => "cudaErrorInsufficientDriver",
        36 => "cudaErrorCallRequiresNewerDriver",
        52 => "cudaErrorMissingConfiguration",
        53 => "cudaErrorPriorLaunchFailure",
        65 => "cudaErrorLaunchMaxDepthExceeded",
        98 => "cudaErrorInvalidDeviceFunction",
        100 => "cudaErrorNoDevice",
        101 => "cudaErrorInvalidDevice",
        127 => "cudaErrorStartupFailure",
        200 => "cudaErrorInvalidKernelImage",
        201 => "cudaErrorDeviceUninitialized",
        209 => "cudaErrorNoKernelImageForDevice",
        214 => "cudaErrorECCUncorrectable",
        218 => "cudaErrorInvalidPtx",
        222 => "cudaErrorUnsupportedPtxVersion",
        400 => "cudaErrorInvalidResourceHandle",
        500 => "cudaErrorSymbolNotFound",
        600 => "cudaErrorNotReady",
        700 => "cudaErrorIllegalAddress",
        701 => "cudaErrorLaunchOutOfResources",
        702 => "cudaErrorLaunchTimeout",
        710 => "cudaErrorAssert",
        715 => "cudaErrorIllegalInstruction",
        716 => "cudaErrorMisalignedAddress",
        717 => "cudaErrorInvalidAddressSpace",
        718 => "cudaErrorInvalidPc",
        719 => "cudaErrorLaunchFailure",
        720 => "cudaErrorCooperativeLaunchTooLarge",
        800 => "cudaErrorNotPermitted",
        801 => "cudaErrorNotSupported",
        900 => "cudaErrorStreamCaptureUnsupported",
        999 => "cudaErrorUnknown",
        _ => return None,
    })
}

/// Why a kernel function failed: its return value, on a CUDA device also the `cudaError_t` it
/// names (the launcher may return `cudaGetLastError()`).
pub fn kernel_failure_message(code: i32, cuda_device: Option<u64>) -> String {
    match (cuda_device, cuda_runtime_error_name(code)) {
        (Some(device), Some(name)) => {
            format!(
                "the kernel returned {code} on CUDA device D{device} (as a cudaError_t: {name})"
            )
        }
        (Some(device), None) => format!("the kernel returned {code} on CUDA device D{device}"),
        (None, _) => format!("the kernel returned {code}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_launch_failures_are_named() {
        assert_eq!(
            kernel_failure_message(9, Some(0)),
            "the kernel returned 9 on CUDA device D0 (as a cudaError_t: cudaErrorInvalidConfiguration)"
        );
        assert_eq!(
            kernel_failure_message(700, Some(1)),
            "the kernel returned 700 on CUDA device D1 (as a cudaError_t: cudaErrorIllegalAddress)"
        );
        assert_eq!(
            kernel_failure_message(12345, Some(0)),
            "the kernel returned 12345 on CUDA device D0"
        );
        assert_eq!(kernel_failure_message(9, None), "the kernel returned 9");
        assert_eq!(cuda_runtime_error_name(0), None, "success is no failure");
    }
}
