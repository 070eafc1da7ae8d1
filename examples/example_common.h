/* Shared by the C examples: status checks that print the runtime's message, a monotonic
 * timer, and row access for hand-written row loops. */
#ifndef CELERITY_EXAMPLE_COMMON_H
#define CELERITY_EXAMPLE_COMMON_H

#include <stdio.h>
#include <time.h>

#include <celerity.h>

/* The program's name in error messages; each example defines it. */
static const char* example_name;

static inline int example_fail(const char* what, celerity_status s) {
    fprintf(stderr, "%s: %s failed: %s: %s\n", example_name, what, celerity_status_string(s), celerity_last_error_message());
    return 1;
}

/* Returns 1 from the calling function when `call` fails. */
#define TRY(call)                                                                                \
    do {                                                                                         \
        celerity_status try_status_ = (call);                                                    \
        if (try_status_ != CELERITY_OK) return example_fail(#call, try_status_);                 \
    } while (0)

static inline double seconds_since(const struct timespec* start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + 1e-9 * (double)(now.tv_nsec - start->tv_nsec);
}

/* Row i of a float accessor, indexed by buffer column (the row's elements are contiguous). */
static inline float* example_row(const celerity_accessor* a, size_t i) {
    return (float*)celerity_accessor_ptr(a, i, a->allocation.offset[1], 0) - a->allocation.offset[1];
}

#endif
