//! The C ABI. The only module that speaks C.
