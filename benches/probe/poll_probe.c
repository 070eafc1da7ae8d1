// Does an idle thread polling on its own cache line slow the host's other threads? (benches/probe/run.sh)
// compute: a fixed pointer-chasing + ALU loop on the main thread beside N background pollers.
// pingpong: main hands a token to a worker (waiting by KIND) and waits for it back, N pollers.
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum kind { PAUSE, PURE, PAUSECLOCK, PAUSECLOCK64, FUTEX };
static const char *names[] = {"pause", "pure", "pauseclock", "pauseclock64", "futex"};
static enum kind parse(const char *s) {
  for (int i = 0; i < 5; i++) if (!strcmp(s, names[i])) return i;
  fprintf(stderr, "kind?\n"); exit(2);
}
static inline uint64_t now_ns(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec;
}
struct __attribute__((aligned(128))) line { _Atomic uint32_t v; };
static struct line stop_line;
static struct line bg[64];
static enum kind bg_kind;
static volatile uint64_t sink;

static void *poller(void *arg) {
  struct line *l = arg; uint64_t n = 0, t = 0;
  while (!atomic_load_explicit(&stop_line.v, memory_order_relaxed)) {
    switch (bg_kind) {
      case PAUSE: __builtin_ia32_pause(); break;
      case PURE: break;
      case PAUSECLOCK: __builtin_ia32_pause(); t += now_ns(); break;
      case PAUSECLOCK64: __builtin_ia32_pause(); if ((++n & 63) == 0) t += now_ns(); break;
      case FUTEX: usleep(100000); break;
    }
    (void)atomic_load_explicit(&l->v, memory_order_acquire);
  }
  sink += t;
  return 0;
}

static struct line req, resp;
static enum kind worker_kind;
static void wait_change(struct line *l, uint32_t old, enum kind k) {
  uint64_t n = 0, t = 0;
  while (atomic_load_explicit(&l->v, memory_order_acquire) == old) {
    switch (k) {
      case PAUSE: __builtin_ia32_pause(); break;
      case PURE: break;
      case PAUSECLOCK: __builtin_ia32_pause(); t += now_ns(); break;
      case PAUSECLOCK64: __builtin_ia32_pause(); if ((++n & 63) == 0) t += now_ns(); break;
      case FUTEX: syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, old, 0, 0, 0); break;
    }
  }
  sink += t;
}
static void *worker(void *arg) {
  (void)arg; uint32_t seen = 0;
  for (;;) {
    wait_change(&req, seen, worker_kind);
    seen = atomic_load(&req.v);
    if (seen == UINT32_MAX) return 0;
    atomic_store_explicit(&resp.v, seen, memory_order_release);
    if (worker_kind == FUTEX) syscall(SYS_futex, &resp.v, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
  }
}
static int cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b; return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: pollprobe compute|pingpong POLLERS BGKIND [WORKERKIND]\n"); return 2; }
  int pollers = atoi(argv[2]); bg_kind = parse(argv[3]);
  pthread_t th[64];
  for (int i = 0; i < pollers; i++) pthread_create(&th[i], 0, poller, &bg[i]);
  usleep(20000);
  if (!strcmp(argv[1], "compute")) {
    size_t n = 1 << 16; uint32_t *next = malloc(n * sizeof *next);  // 256 KiB: L2
    for (size_t i = 0; i < n; i++) next[i] = i;
    srand(1); for (size_t i = n - 1; i > 0; i--) { size_t j = rand() % i; uint32_t t = next[i]; next[i] = next[j]; next[j] = t; }
    double best = 1e30, sum = 0; int reps = 15;
    for (int r = 0; r < reps; r++) {
      uint64_t t0 = now_ns(); uint32_t p = 0; uint64_t acc = 0;
      for (int i = 0; i < 4000000; i++) { p = next[p]; acc = acc * 31 + p; }
      sink += acc; double ns = (now_ns() - t0) / 4e6; sum += ns; if (ns < best) best = ns;
    }
    printf("compute pollers=%d bg=%s: %.2f ns/iter best, %.2f mean\n", pollers, names[bg_kind], best, sum / reps);
  } else {
    worker_kind = argc > 4 ? parse(argv[4]) : PAUSE;
    pthread_t w; pthread_create(&w, 0, worker, 0);
    int rounds = 200000; uint64_t *lat = malloc(rounds * sizeof *lat);
    for (int i = 0; i < rounds; i++) {
      uint32_t v = (uint32_t)i + 1;
      uint64_t t0 = now_ns();
      atomic_store_explicit(&req.v, v, memory_order_release);
      if (worker_kind == FUTEX) syscall(SYS_futex, &req.v, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
      while (atomic_load_explicit(&resp.v, memory_order_acquire) != v) __builtin_ia32_pause();
      lat[i] = now_ns() - t0;
      if ((i & 1023) == 0) { uint64_t s = now_ns(); while (now_ns() - s < 30000) {} }  // let a worker go idle now and then
    }
    atomic_store(&req.v, UINT32_MAX);
    if (worker_kind == FUTEX) syscall(SYS_futex, &req.v, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
    pthread_join(w, 0);
    qsort(lat, rounds, sizeof *lat, cmp);
    double mean = 0; for (int i = 0; i < rounds; i++) mean += lat[i]; mean /= rounds;
    printf("pingpong pollers=%d bg=%s worker=%s: median %lu ns, p90 %lu, p99 %lu, mean %.0f\n", pollers, names[bg_kind],
           names[worker_kind], lat[rounds / 2], lat[rounds * 9 / 10], lat[rounds * 99 / 100], mean);
  }
  atomic_store(&stop_line.v, 1);
  for (int i = 0; i < pollers; i++) pthread_join(th[i], 0);
  return 0;
}
