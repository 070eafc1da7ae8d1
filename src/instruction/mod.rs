//! Instruction graph generation (IDAG): allocations, copies, kernels, transfers and reductions per node.
