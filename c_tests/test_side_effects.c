/* Host objects with side effects: host tasks on one object run one at a time in submission
 * order, see the instances in side-effect order, host-object fences return after every earlier
 * side effect, and the destroy callback runs exactly once, after the object's last side
 * effect (checked after shutdown), also for an object that was never used. */
#include <stdatomic.h>

#include "test_runtime.h"

static atomic_int kernel_errors;
static celerity_runtime_info info;

#define KCHECK(cond)                                                                             \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            if (atomic_fetch_add(&kernel_errors, 1) < 10)                                        \
                fprintf(stderr, "%s:%d: in a host task: %s failed\n", __FILE__, __LINE__, #cond);\
        }                                                                                        \
    } while (0)

enum { MAX_LOG = 128 };

typedef struct {
    const char* name;
    int log[MAX_LOG];
    int n;                 /* entries in log; only touched by host tasks (serialised) */
    atomic_int in_flight;
    atomic_int destroyed;  /* destroy callback calls */
    int n_at_destroy;
} object;

static void destroy_object(void* instance) {
    object* o = (object*)instance;
    o->n_at_destroy = o->n;
    atomic_fetch_add(&o->destroyed, 1);
}

typedef struct {
    int id;
    int num_objects;
    object* expect[2]; /* the instances, in side-effect order */
} task_arg;

static int side_effect_task(const celerity_kernel_context* ctx, void* user_data) {
    const task_arg* a = (const task_arg*)user_data;
    KCHECK(ctx->num_host_objects == (uint32_t)a->num_objects);
    if (ctx->num_host_objects != (uint32_t)a->num_objects) return 0;
    for (int i = 0; i < a->num_objects; ++i) {
        KCHECK(ctx->host_objects[i] == a->expect[i]);
        object* o = (object*)ctx->host_objects[i];
        KCHECK(atomic_fetch_add(&o->in_flight, 1) == 0);
    }
    /* Optional accessor 0: a 0-D buffer holding the number of earlier tasks writing it. */
    if (ctx->num_accessors == 1) {
        double* v = (double*)celerity_accessor_ptr(&ctx->accessors[0], 0, 0, 0);
        *v += 1;
    }
    for (int i = 0; i < a->num_objects; ++i) {
        object* o = (object*)ctx->host_objects[i];
        if (o->n < MAX_LOG) o->log[o->n] = a->id;
        o->n++;
    }
    for (int i = 0; i < a->num_objects; ++i) atomic_fetch_sub(&((object*)ctx->host_objects[i])->in_flight, 1);
    return 0;
}

static object A = {.name = "A"}, B = {.name = "B"}, C = {.name = "C"}, D = {.name = "D"};
static task_arg args[200];
static int num_args = 0;
/* The expected logs. */
static int want_A[MAX_LOG], want_B[MAX_LOG], want_C[MAX_LOG], nA, nB, nC;

static void submit(celerity_host_task_kind kind, celerity_host_object* h1, object* o1, celerity_host_object* h2,
                   object* o2, celerity_buffer* counter) {
    task_arg* a = &args[num_args];
    a->id = num_args++;
    a->num_objects = 0;
    char name[32];
    snprintf(name, sizeof name, "side_effect_%d", a->id);
    celerity_cg* cg = test_cg(name);
    celerity_host_object* hs[2] = {h1, h2};
    object* os[2] = {o1, o2};
    for (int i = 0; i < 2; ++i) {
        if (hs[i] == NULL) continue;
        CHECK_OK(celerity_cg_side_effect(cg, hs[i]));
        a->expect[a->num_objects++] = os[i];
        if (os[i] == &A) want_A[nA++] = a->id;
        if (os[i] == &B) want_B[nB++] = a->id;
        if (os[i] == &C) want_C[nC++] = a->id;
    }
    if (counter != NULL) test_access(cg, counter, CELERITY_ACCESS_READ_WRITE, celerity_all());
    CHECK_OK(celerity_submit_host_task(cg, kind, 0, NULL, NULL, side_effect_task, a, NULL));
}

static void check_log(const object* o, const int* want, int n) {
    CHECK(o->n == n);
    int bad = 0;
    for (int i = 0; i < n && i < MAX_LOG; ++i) {
        if (o->log[i] != want[i] && bad++ < 3) fprintf(stderr, "%s.log[%d] = %d, expected %d\n", o->name, i, o->log[i], want[i]);
    }
    CHECK(bad == 0);
}

static void fence_object(celerity_host_object* h) {
    celerity_future* f = NULL;
    CHECK_OK(celerity_fence_host_object(h, &f));
    CHECK_OK(celerity_future_wait(f));
    bool ready = false;
    CHECK_OK(celerity_future_is_ready(f, &ready));
    CHECK(ready);
    celerity_future_release(f);
}

int main(int argc, char** argv) {
    info = test_init(&argc, &argv);
    if (info.num_nodes != 1) printf("note: logs are only checked on a single node\n");
    celerity_host_object *ha = NULL, *hb = NULL, *hc = NULL, *hd = NULL;
    CHECK_OK(celerity_host_object_create(&A, destroy_object, &ha));
    CHECK_OK(celerity_host_object_create(&B, destroy_object, &hb));
    CHECK_OK(celerity_host_object_create(&C, NULL, &hc));
    CHECK_OK(celerity_host_object_create(&D, destroy_object, &hd));
    CHECK_OK(celerity_host_object_release(hd)); /* never used: destroyed exactly once too */

    double zero = 0;
    celerity_buffer* counter = test_buffer(0, 1, 1, 1, sizeof(double), &zero, "counter");
    static const celerity_host_task_kind kinds[3] = {CELERITY_HOST_TASK_ON_MASTER_NODE, CELERITY_HOST_TASK_ONCE,
                                                     CELERITY_HOST_TASK_COLLECTIVE};
    int counted = 0;
    for (int round = 0; round < 40; ++round) {
        celerity_host_task_kind kind = kinds[round % 3];
        /* (a collective task would write the counter on every node) */
        celerity_buffer* cnt = round % 4 == 0 && kind != CELERITY_HOST_TASK_COLLECTIVE ? counter : NULL;
        counted += cnt != NULL;
        switch (round % 5) {
        case 0: submit(kind, ha, &A, NULL, NULL, cnt); break;
        case 1: submit(kind, hb, &B, NULL, NULL, cnt); break;
        case 2: submit(kind, ha, &A, hb, &B, cnt); break;
        case 3: submit(kind, hb, &B, hc, &C, cnt); break;
        default: submit(kind, hc, &C, ha, &A, cnt); break;
        }
        if (round == 19) {
            /* A fence returns after every earlier side effect on the object. */
            fence_object(ha);
            if (info.num_nodes == 1) check_log(&A, want_A, nA);
        }
    }
    fence_object(hb);
    if (info.num_nodes == 1) check_log(&B, want_B, nB);
    double got = -1;
    CHECK_OK(test_read(counter, NULL, &got, sizeof got));
    CHECK(got == counted);

    /* Release with side effects still pending; then more tasks on the other objects. */
    int final_nA = nA;
    CHECK_OK(celerity_host_object_release(ha));
    submit(CELERITY_HOST_TASK_ON_MASTER_NODE, hb, &B, hc, &C, NULL);
    submit(CELERITY_HOST_TASK_ONCE, hc, &C, NULL, NULL, NULL);
    fence_object(hc);
    if (info.num_nodes == 1) {
        check_log(&C, want_C, nC);
        check_log(&A, want_A, nA);
    }
    CHECK_OK(celerity_host_object_release(hb));
    CHECK_OK(celerity_host_object_release(hc));
    CHECK_OK(celerity_buffer_release(counter));
    CHECK_OK(celerity_runtime_shutdown());

    CHECK(atomic_load(&A.destroyed) == 1);
    CHECK(atomic_load(&B.destroyed) == 1);
    CHECK(atomic_load(&C.destroyed) == 0); /* no destroy callback */
    CHECK(atomic_load(&D.destroyed) == 1);
    if (info.num_nodes == 1) {
        CHECK(A.n_at_destroy == final_nA); /* destroy ran after the last side effect */
        CHECK(B.n_at_destroy == nB);
        check_log(&B, want_B, nB);
    }
    CHECK(atomic_load(&kernel_errors) == 0);
    return celerity_test_finish("test_side_effects");
}
