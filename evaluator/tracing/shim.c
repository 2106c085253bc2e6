/* KernelEvo trace shim: a record of every GPU kernel, copy and memset a candidate process runs, taken with
 * CUPTI's activity API below Python and streamed to the verifier's parent as authenticated frames.
 *
 * Loaded with LD_PRELOAD, so its constructor runs before the interpreter and before any candidate code. It reads
 * two inherited file descriptors named by the environment (KERNELEVO_TRACE_FD: where frames go;
 * KERNELEVO_TRACE_KEY_FD: 16 random bytes, the MAC key), removes every trace variable from the environment
 * (and itself from LD_PRELOAD, so compilers and other children do not load it), then turns CUPTI on. Optional:
 * KERNELEVO_CUPTI_LIB (the libcupti to load), KERNELEVO_TRACE_EXE (only that program claims the channel; a
 * launcher exec'd first passes it on), KERNELEVO_TRACE_LATENCY=0 (no queued timestamps: cheaper per launch).
 * Nothing after the constructor reads the environment or trusts the process it lives in.
 *
 * Frame: u32 length | u64 seq | u8 type | payload | u64 mac, little-endian; length counts the bytes after it;
 * seq counts every frame from 0; mac = SipHash-2-4(key, seq|type|payload). A frame never exceeds PIPE_BUF, so a
 * blocking write of one frame is atomic on a pipe. The layouts are mirrored in evaluator/tracing/records.py.
 *
 * Anything that fails (no driver, no GPU, no CUPTI, a CUPTI of another version) becomes an ERROR frame and the
 * shim stays inert apart from MARK and FLUSH frames: it never aborts the process. */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cupti_activity.h>
#include <cupti_result.h>
#include <cupti_version.h>

#include "siphash24.h"

/* The activity record structs are versioned and change between CUPTI releases; build.py passes the newest ones
 * the headers define, and the constructor refuses a libcupti of another release. */
#ifndef KE_KERNEL_T
#error "build with -DKE_KERNEL_T=CUpti_ActivityKernelN (evaluator/tracing/build.py reads it from the headers)"
#endif
#ifndef KE_MEMCPY_T
#error "build with -DKE_MEMCPY_T=CUpti_ActivityMemcpyN"
#endif
#ifndef KE_MEMSET_T
#error "build with -DKE_MEMSET_T=CUpti_ActivityMemsetN"
#endif
#ifndef KE_P2P_T
#error "build with -DKE_P2P_T=CUpti_ActivityMemcpyPtoPN"
#endif
#ifndef KE_CUPTI_SONAME
#define KE_CUPTI_SONAME "libcupti.so"
#endif

#define KE_EXPORT __attribute__((visibility("default")))

enum { KE_PROTOCOL = 1, KE_MAX_FRAME = 4096, KE_MAX_NAME = 1024, KE_MAX_TEXT = 480, KE_BUFFER = 1 << 20 };
enum { R_START = 1, R_ERROR = 2, R_KERNEL = 3, R_MEMCPY = 4, R_MEMSET = 5, R_MARK = 6, R_DROPPED = 7, R_FLUSH = 8 };
enum {
    S_CHANNEL = 1, S_DRIVER = 2, S_DLOPEN = 3, S_SYMBOL = 4, S_VERSION = 5, S_CALLBACKS = 6, S_ENABLE = 7,
    S_LATENCY = 8, S_FLUSH = 9, S_STREAM = 10,
};
enum { F_CUPTI_LOADED = 1, F_ACTIVE = 2, F_LATENCY = 4, F_PEER_COPIES = 8, F_FD_MOVED = 16 };
enum { M_FALLBACK_CLOCK = 1, M_STREAM_UNKNOWN = 2, M_STREAM_WITH_CONTEXT = 4, M_STREAM_LEGACY_HANDLE = 8 };
enum { K_NAME_TRUNCATED = 1, K_ACCESS_POLICY = 2, K_DEVICE_LAUNCHED = 4, K_NO_NAME = 8 };

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_fd = -1;           /* record channel; -1 once closed or broken */
static int g_ready = 0;         /* the channel and key were set up */
static int g_active = 0;        /* CUPTI records activity */
static int g_latency = 1;       /* ask CUPTI for queued timestamps (KERNELEVO_TRACE_LATENCY=0: not) */
static int g_stream_reported = 0;
static uint64_t g_seq = 0;
static uint8_t g_key[16];
static uint16_t g_start_flags = 0;
static uint32_t g_cupti_runtime = 0;

static __typeof__(cuptiGetVersion) *p_version;
static __typeof__(cuptiGetResultString) *p_result_string;
static __typeof__(cuptiActivityRegisterCallbacks) *p_register;
static __typeof__(cuptiActivityEnable) *p_enable;
static __typeof__(cuptiActivityGetNextRecord) *p_next;
static __typeof__(cuptiActivityGetNumDroppedRecords) *p_dropped;
static __typeof__(cuptiActivityFlushAll) *p_flush;
static __typeof__(cuptiGetTimestamp) *p_timestamp;
static __typeof__(cuptiGetStreamIdEx) *p_stream_id;
static __typeof__(cuptiActivityEnableLatencyTimestamps) *p_latency;
static __typeof__(cuCtxGetCurrent) *p_ctx_current;

/* ---- frame encoding ---- */

typedef struct {
    uint8_t b[KE_MAX_FRAME];
    size_t n;
} ke_buf;

static void put(ke_buf *e, uint64_t v, int bytes) {
    if (e->n + (size_t)bytes > sizeof e->b) return;
    for (int i = 0; i < bytes; i++) e->b[e->n++] = (uint8_t)(v >> (8 * i));
}
static void put_bytes(ke_buf *e, const void *p, size_t len) {
    if (e->n + len > sizeof e->b) return;
    memcpy(e->b + e->n, p, len);
    e->n += len;
}

static int write_all(int fd, const uint8_t *p, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n == 0 || errno == EAGAIN || errno == EWOULDBLOCK) {
            struct pollfd w = {.fd = fd, .events = POLLOUT};
            if (poll(&w, 1, -1) < 0 && errno != EINTR) return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

/* Frames one payload, MACs it and writes it; returns its seq, or UINT64_MAX when the channel is gone. */
static uint64_t emit(uint8_t type, const ke_buf *payload) {
    ke_buf f = {.n = 0};
    uint64_t seq = UINT64_MAX;
    pthread_mutex_lock(&g_lock);
    if (g_fd >= 0) {
        seq = g_seq++;
        put(&f, 8 + 1 + payload->n + 8, 4);
        put(&f, seq, 8);
        put(&f, type, 1);
        put_bytes(&f, payload->b, payload->n);
        put(&f, ke_siphash24(g_key, f.b + 4, f.n - 4), 8);
        if (write_all(g_fd, f.b, f.n) != 0) {
            close(g_fd); /* the parent stopped reading: it sees the trace end where it does */
            g_fd = -1;
            seq = UINT64_MAX;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return seq;
}

static void emit_error(uint16_t stage, int32_t code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void emit_error(uint16_t stage, int32_t code, const char *fmt, ...) {
    char text[KE_MAX_TEXT];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (len < 0) len = 0;
    if ((size_t)len >= sizeof text) len = (int)sizeof text - 1;
    ke_buf p = {.n = 0};
    put(&p, stage, 2);
    put(&p, (uint32_t)code, 4);
    put(&p, (uint16_t)len, 2);
    put_bytes(&p, text, (size_t)len);
    emit(R_ERROR, &p);
}

static const char *result_text(CUptiResult r) {
    const char *s = NULL;
    if (p_result_string == NULL || p_result_string(r, &s) != CUPTI_SUCCESS || s == NULL) return "unknown CUPTI result";
    return s;
}

static uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- activity records ---- */

static void emit_kernel(const KE_KERNEL_T *k) {
    ke_buf p = {.n = 0};
    uint8_t flags = 0;
    const char *name = k->name;
    size_t len = 0;
    if (name == NULL) {
        flags |= K_NO_NAME;
    } else {
        len = strnlen(name, KE_MAX_NAME + 1);
        if (len > KE_MAX_NAME) {
            len = KE_MAX_NAME;
            flags |= K_NAME_TRUNCATED;
        }
    }
    if (k->pAccessPolicyWindow != NULL) flags |= K_ACCESS_POLICY;
    if (k->isDeviceLaunched) flags |= K_DEVICE_LAUNCHED;
    put(&p, k->start, 8);
    put(&p, k->end, 8);
    put(&p, k->queued, 8);
    put(&p, k->deviceId, 4);
    put(&p, k->contextId, 4);
    put(&p, k->streamId, 4);
    put(&p, k->correlationId, 4);
    put(&p, k->graphId, 4);
    put(&p, (uint32_t)k->gridX, 4);
    put(&p, (uint32_t)k->gridY, 4);
    put(&p, (uint32_t)k->gridZ, 4);
    put(&p, (uint32_t)k->blockX, 4);
    put(&p, (uint32_t)k->blockY, 4);
    put(&p, (uint32_t)k->blockZ, 4);
    put(&p, (uint32_t)k->dynamicSharedMemory, 4);
    put(&p, (uint32_t)k->staticSharedMemory, 4);
    put(&p, k->registersPerThread, 2);
    put(&p, flags, 1);
    put(&p, (uint8_t)k->kind, 1);
    put(&p, (uint16_t)len, 2);
    if (len) put_bytes(&p, name, len);
    emit(R_KERNEL, &p);
}

static void emit_copy(uint64_t start, uint64_t end, uint64_t bytes, uint32_t device, uint32_t context, uint32_t stream,
                      uint32_t correlation, uint32_t graph, uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind,
                      uint8_t cupti_flags, uint8_t peer, uint32_t src_device, uint32_t dst_device) {
    ke_buf p = {.n = 0};
    put(&p, start, 8);
    put(&p, end, 8);
    put(&p, bytes, 8);
    put(&p, device, 4);
    put(&p, context, 4);
    put(&p, stream, 4);
    put(&p, correlation, 4);
    put(&p, graph, 4);
    put(&p, copy_kind, 1);
    put(&p, src_kind, 1);
    put(&p, dst_kind, 1);
    put(&p, cupti_flags, 1);
    put(&p, peer, 1);
    put(&p, src_device, 4);
    put(&p, dst_device, 4);
    emit(R_MEMCPY, &p);
}

static void emit_memset(const KE_MEMSET_T *m) {
    ke_buf p = {.n = 0};
    put(&p, m->start, 8);
    put(&p, m->end, 8);
    put(&p, m->bytes, 8);
    put(&p, m->deviceId, 4);
    put(&p, m->contextId, 4);
    put(&p, m->streamId, 4);
    put(&p, m->correlationId, 4);
    put(&p, m->graphId, 4);
    put(&p, m->value, 4);
    put(&p, m->memoryKind, 2);
    put(&p, m->flags, 2);
    emit(R_MEMSET, &p);
}

static void emit_dropped(uint64_t count, uint32_t stream) {
    ke_buf p = {.n = 0};
    put(&p, count, 8);
    put(&p, 0, 4); /* context id: CUPTI hands a CUcontext here, not its id */
    put(&p, stream, 4);
    emit(R_DROPPED, &p);
}

static void emit_activity(const CUpti_Activity *rec) {
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        emit_kernel((const KE_KERNEL_T *)rec);
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const KE_MEMCPY_T *c = (const KE_MEMCPY_T *)rec;
        emit_copy(c->start, c->end, c->bytes, c->deviceId, c->contextId, c->streamId, c->correlationId, c->graphId,
                  c->copyKind, c->srcKind, c->dstKind, c->flags, 0, c->deviceId, c->deviceId);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const KE_P2P_T *c = (const KE_P2P_T *)rec;
        emit_copy(c->start, c->end, c->bytes, c->deviceId, c->contextId, c->streamId, c->correlationId, c->graphId,
                  c->copyKind, c->srcKind, c->dstKind, c->flags, 1, c->srcDeviceId, c->dstDeviceId);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET:
        emit_memset((const KE_MEMSET_T *)rec);
        break;
    default:
        break;
    }
}

static void CUPTIAPI on_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    void *p = NULL;
    if (posix_memalign(&p, 8, KE_BUFFER) != 0) p = NULL; /* CUPTI counts what it could not store as dropped */
    *buffer = p;
    *size = p ? KE_BUFFER : 0;
    *max_records = 0;
}

static void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void)size;
    CUpti_Activity *rec = NULL;
    while (valid > 0 && p_next(buffer, valid, &rec) == CUPTI_SUCCESS) emit_activity(rec);
    size_t dropped = 0;
    if (p_dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0) emit_dropped(dropped, stream);
    free(buffer);
}

/* ---- set-up ---- */

static int parse_fd(const char *s) {
    if (s == NULL || *s == '\0') return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < 0 || v > INT_MAX) return -1;
    return (int)v;
}

static int read_exact(int fd, uint8_t *p, size_t len) {
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            return -1;
        }
    }
    return 0;
}

/* True when this process runs the program the parent meant (an exec'd intermediate such as a launcher leaves
 * the variables and descriptors to the program it starts). */
static int is_expected_program(const char *expected) {
    if (expected == NULL || *expected == '\0') return 1;
    char self[PATH_MAX], want[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 0;
    self[n] = '\0';
    if (realpath(expected, want) == NULL) return 0;
    return strcmp(self, want) == 0;
}

static void remove_from_preload(void) {
    Dl_info info;
    const char *preload = getenv("LD_PRELOAD");
    if (preload == NULL || dladdr((void *)&remove_from_preload, &info) == 0 || info.dli_fname == NULL) return;
    char own[PATH_MAX];
    if (realpath(info.dli_fname, own) == NULL) snprintf(own, sizeof own, "%s", info.dli_fname);
    size_t cap = strlen(preload) + 1;
    char *copy = strdup(preload), *kept = calloc(cap, 1);
    if (copy == NULL || kept == NULL) {
        free(copy);
        free(kept);
        return;
    }
    char *save = NULL;
    for (char *tok = strtok_r(copy, ": ", &save); tok != NULL; tok = strtok_r(NULL, ": ", &save)) {
        char real[PATH_MAX];
        const char *cmp = realpath(tok, real) ? real : tok;
        if (strcmp(cmp, own) == 0 || strcmp(tok, info.dli_fname) == 0) continue;
        if (kept[0]) strcat(kept, ":");
        strcat(kept, tok);
    }
    if (kept[0]) setenv("LD_PRELOAD", kept, 1);
    else unsetenv("LD_PRELOAD");
    free(copy);
    free(kept);
}

/* Moves the record descriptor to an unpredictable high number, close-on-exec and blocking, so that children do
 * not inherit it and a candidate cannot find it by counting from 3 (the MAC is what makes forgery visible). */
static int settle_record_fd(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0) return -1;
    if (fl & O_NONBLOCK) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    struct rlimit lim;
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) r = (uint32_t)(getpid() ^ monotonic_ns());
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur > 512) {
        long span = (long)(lim.rlim_cur > 65536 ? 65536 : lim.rlim_cur) - 300;
        int moved = fcntl(fd, F_DUPFD_CLOEXEC, 256 + (int)(r % (uint32_t)span));
        if (moved >= 0) {
            close(fd);
            g_start_flags |= F_FD_MOVED;
            return moved;
        }
    }
    return fd;
}

#define KE_SYMBOL(ptr, name)                                                                          \
    do {                                                                                             \
        *(void **)(&ptr) = dlsym(lib, name);                                                         \
        if (ptr == NULL) {                                                                           \
            emit_error(S_SYMBOL, 0, "%s lacks %s: use a CUPTI of CUDA 12 or newer", path, name);     \
            return;                                                                                  \
        }                                                                                            \
    } while (0)

static int same_release(uint32_t compiled, uint32_t loaded) {
    if (compiled >= 130000) return compiled / 100 == loaded / 100; /* xxyyzz: same CUDA major.minor */
    return compiled == loaded;
}

static void start_cupti(const char *path) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *why = dlerror();
        emit_error(S_DLOPEN, 0, "cannot load CUPTI (%s): %s; install nvidia-cuda-cupti or set KERNELEVO_CUPTI_LIB",
                   path, why ? why : "unknown error");
        return;
    }
    g_start_flags |= F_CUPTI_LOADED;
    KE_SYMBOL(p_result_string, "cuptiGetResultString");
    KE_SYMBOL(p_version, "cuptiGetVersion");
    KE_SYMBOL(p_register, "cuptiActivityRegisterCallbacks");
    KE_SYMBOL(p_enable, "cuptiActivityEnable");
    KE_SYMBOL(p_next, "cuptiActivityGetNextRecord");
    KE_SYMBOL(p_dropped, "cuptiActivityGetNumDroppedRecords");
    KE_SYMBOL(p_flush, "cuptiActivityFlushAll");
    KE_SYMBOL(p_timestamp, "cuptiGetTimestamp");
    KE_SYMBOL(p_stream_id, "cuptiGetStreamIdEx");
    *(void **)(&p_latency) = dlsym(lib, "cuptiActivityEnableLatencyTimestamps");

    CUptiResult r = p_version(&g_cupti_runtime);
    if (r != CUPTI_SUCCESS || !same_release(CUPTI_API_VERSION, g_cupti_runtime)) {
        emit_error(S_VERSION, (int32_t)r,
                   "%s is CUPTI API %u but the shim was compiled against %u (record layouts differ): rebuild it with "
                   "the headers of the library it loads",
                   path, g_cupti_runtime, (unsigned)CUPTI_API_VERSION);
        return;
    }
    r = p_register(on_buffer_requested, on_buffer_completed);
    if (r != CUPTI_SUCCESS) {
        emit_error(S_CALLBACKS, (int32_t)r, "cuptiActivityRegisterCallbacks failed: %s", result_text(r));
        return;
    }
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == NULL) {
        const char *why = dlerror();
        emit_error(S_DRIVER, 0, "no CUDA driver (libcuda.so.1: %s): nothing to trace on this machine",
                   why ? why : "not found");
        return;
    }
    *(void **)(&p_ctx_current) = dlsym(driver, "cuCtxGetCurrent");
    if (p_latency != NULL && g_latency) {
        r = p_latency(1); /* queued timestamps: the host time of each launch, to place it in its call window */
        if (r == CUPTI_SUCCESS) g_start_flags |= F_LATENCY;
        else emit_error(S_LATENCY, (int32_t)r, "cuptiActivityEnableLatencyTimestamps failed: %s", result_text(r));
    }
    r = p_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
        emit_error(S_ENABLE, (int32_t)r, "cuptiActivityEnable(CONCURRENT_KERNEL) failed: %s (no GPU visible?)",
                   result_text(r));
        return;
    }
    static const struct { CUpti_ActivityKind kind; const char *name; } required[] = {
        {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
        {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"},
    };
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        r = p_enable(required[i].kind);
        if (r != CUPTI_SUCCESS) {
            emit_error(S_ENABLE, (int32_t)r, "cuptiActivityEnable(%s) failed: %s", required[i].name, result_text(r));
            return;
        }
    }
    r = p_enable(CUPTI_ACTIVITY_KIND_MEMCPY2); /* peer-to-peer copies: only where several GPUs are visible */
    if (r == CUPTI_SUCCESS) g_start_flags |= F_PEER_COPIES;
    g_active = 1;
    g_start_flags |= F_ACTIVE;
}

__attribute__((constructor)) static void ke_trace_init(void) {
    const char *fd_text = getenv("KERNELEVO_TRACE_FD");
    if (fd_text == NULL) return; /* not a traced process */
    if (!is_expected_program(getenv("KERNELEVO_TRACE_EXE"))) return;
    int fd = parse_fd(fd_text), key_fd = parse_fd(getenv("KERNELEVO_TRACE_KEY_FD"));
    char cupti_path[PATH_MAX];
    const char *lib = getenv("KERNELEVO_CUPTI_LIB");
    snprintf(cupti_path, sizeof cupti_path, "%s", (lib && *lib) ? lib : KE_CUPTI_SONAME);
    const char *latency = getenv("KERNELEVO_TRACE_LATENCY");
    g_latency = !(latency && strcmp(latency, "0") == 0);
    unsetenv("KERNELEVO_TRACE_FD");
    unsetenv("KERNELEVO_TRACE_KEY_FD");
    unsetenv("KERNELEVO_CUPTI_LIB");
    unsetenv("KERNELEVO_TRACE_EXE");
    unsetenv("KERNELEVO_TRACE_LATENCY");
    remove_from_preload();

    int keyed = key_fd >= 0 && read_exact(key_fd, g_key, sizeof g_key) == 0;
    if (key_fd >= 0) close(key_fd);
    if (fd < 0) return;
    if (!keyed) { /* nothing can be authenticated: end the channel, the parent sees no START frame */
        close(fd);
        return;
    }
    fd = settle_record_fd(fd);
    if (fd < 0) return;
    g_fd = fd;
    g_ready = 1;

    start_cupti(cupti_path);
    ke_buf p = {.n = 0};
    put(&p, KE_PROTOCOL, 2);
    put(&p, g_start_flags, 2);
    put(&p, (uint32_t)CUPTI_API_VERSION, 4);
    put(&p, g_cupti_runtime, 4);
    put(&p, (uint32_t)getpid(), 4);
    emit(R_START, &p);
}

/* The CUPTI id of a stream. CUPTI does not resolve the legacy default stream from a NULL handle without help, so
 * the current context and CU_STREAM_LEGACY are tried too; the first complete failure is reported once. The last
 * answer is cached per (handle, context): the harness marks the same long-lived stream thousands of times. */
static struct {
    int valid;
    uint64_t handle;
    CUcontext ctx;
    uint32_t id;
    uint8_t flags;
} g_stream_cache;

static int resolve_stream(uint64_t handle, uint32_t *id, uint8_t *flags) {
    CUstream stream = (CUstream)(uintptr_t)handle;
    CUcontext ctx = NULL;
    if (p_ctx_current == NULL || p_ctx_current(&ctx) != CUDA_SUCCESS) ctx = NULL;
    pthread_mutex_lock(&g_lock);
    int hit = g_stream_cache.valid && g_stream_cache.handle == handle && g_stream_cache.ctx == ctx;
    if (hit) {
        *id = g_stream_cache.id;
        *flags |= g_stream_cache.flags;
    }
    pthread_mutex_unlock(&g_lock);
    if (hit) return 1;
    uint8_t how = 0;
    CUptiResult plain = p_stream_id(NULL, stream, 0, id), with_ctx = CUPTI_ERROR_UNKNOWN, legacy = CUPTI_ERROR_UNKNOWN;
    int ok = plain == CUPTI_SUCCESS;
    if (!ok && ctx != NULL) {
        with_ctx = p_stream_id(ctx, stream, 0, id);
        ok = with_ctx == CUPTI_SUCCESS;
        how = M_STREAM_WITH_CONTEXT;
        if (!ok && handle == 0) {
            legacy = p_stream_id(ctx, CU_STREAM_LEGACY, 0, id);
            ok = legacy == CUPTI_SUCCESS;
            how = M_STREAM_WITH_CONTEXT | M_STREAM_LEGACY_HANDLE;
        }
    }
    if (!ok) {
        if (!__atomic_exchange_n(&g_stream_reported, 1, __ATOMIC_SEQ_CST))
            emit_error(S_STREAM, (int32_t)plain,
                       "cuptiGetStreamIdEx could not resolve stream handle %#llx (no context: %s; current context %p: "
                       "%s; legacy handle: %s)", (unsigned long long)handle, result_text(plain), (void *)ctx,
                       result_text(with_ctx), result_text(legacy));
        return 0;
    }
    *flags |= how;
    pthread_mutex_lock(&g_lock);
    g_stream_cache.valid = 1;
    g_stream_cache.handle = handle;
    g_stream_cache.ctx = ctx;
    g_stream_cache.id = *id;
    g_stream_cache.flags = how;
    pthread_mutex_unlock(&g_lock);
    return 1;
}

/* ---- exported to the harness (ctypes) ---- */

/* Writes a MARK frame: the harness's tag, the time now (CUPTI's clock, or CLOCK_MONOTONIC flagged as such), and
 * the CUPTI id of the stream behind `stream_handle` (a CUstream; 0 is the legacy default stream). */
KE_EXPORT void ke_trace_mark(uint64_t tag, uint64_t stream_handle) {
    if (!g_ready) return;
    uint8_t flags = 0;
    uint64_t ts = 0;
    uint32_t stream_id = 0;
    if (!g_active || p_timestamp(&ts) != CUPTI_SUCCESS) {
        ts = monotonic_ns();
        flags |= M_FALLBACK_CLOCK;
    }
    if (!g_active || !resolve_stream(stream_handle, &stream_id, &flags)) {
        stream_id = 0;
        flags |= M_STREAM_UNKNOWN;
    }
    ke_buf p = {.n = 0};
    put(&p, tag, 8);
    put(&p, ts, 8);
    put(&p, stream_handle, 8);
    put(&p, stream_id, 4);
    put(&p, flags, 1);
    emit(R_MARK, &p);
}

/* Delivers every buffered activity record (call after synchronising the device), then a FLUSH frame; returns
 * the FLUSH frame's seq so the parent can wait until it has read that far (UINT64_MAX: no channel). */
KE_EXPORT uint64_t ke_trace_flush(void) {
    if (!g_ready) return UINT64_MAX;
    CUptiResult r = CUPTI_SUCCESS;
    uint8_t flags = 0;
    uint64_t ts = 0;
    if (g_active) {
        r = p_flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        if (r != CUPTI_SUCCESS) emit_error(S_FLUSH, (int32_t)r, "cuptiActivityFlushAll failed: %s", result_text(r));
        size_t dropped = 0;
        if (p_dropped(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) emit_dropped(dropped, 0);
    }
    if (!g_active || p_timestamp(&ts) != CUPTI_SUCCESS) {
        ts = monotonic_ns();
        flags |= M_FALLBACK_CLOCK;
    }
    ke_buf p = {.n = 0};
    put(&p, ts, 8);
    put(&p, (uint32_t)r, 4);
    put(&p, flags, 1);
    return emit(R_FLUSH, &p);
}

/* 1 while CUPTI records activity and the channel is open, else 0. */
KE_EXPORT int ke_trace_status(void) {
    int open;
    pthread_mutex_lock(&g_lock);
    open = g_fd >= 0;
    pthread_mutex_unlock(&g_lock);
    return g_active && open;
}
