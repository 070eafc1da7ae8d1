/* A second translation unit including the header: static inline helpers must not clash. */
#include "celerity.h"

int second_translation_unit_abi_version(void);

int second_translation_unit_abi_version(void) {
    return celerity_abi_compatible() ? (int)CELERITY_ABI_VERSION : -1;
}
