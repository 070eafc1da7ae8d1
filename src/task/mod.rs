//! The task layer: tasks, buffer accesses, range mappers and the task graph (TDAG).
