// cuda_cpu_runtime.h — the scheduler behind tools/cuda_cpu: runs one CUDA block at a time on
// the calling OS thread, one fiber (a small stack + saved registers) per CUDA thread.
//
// Why fibers: __syncthreads and warp collectives must really wait for the other threads, and
// the order in which threads run between two waits is what makes a race visible. A fiber runs
// until it waits (barrier, warp collective) or exits; the scheduler then picks the next one in
// the launch's order (forward, reverse or seeded random) and releases a barrier only when every
// thread of the block waits at the same one. Anything else (a barrier inside an `if`, a warp
// collective some lanes never reach) ends the launch with an error instead of a hang.
//
// Memory faults (out-of-bounds global reads and writes hit a guard page, a fiber's stack
// overflows into its guard page) and a CPU-time limit end the launch through a signal handler
// that jumps back to the launcher; the Python side names the argument the address belongs to.
//
// Everything here is internal to the module's shared library; kernels see only the CUDA names
// that cuda_cpu.h defines on top of it.
#pragma once
#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <string>
#include <vector>
#include <sys/mman.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

struct uint3 { unsigned x, y, z; };
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
    constexpr dim3(uint3 u) : x(u.x), y(u.y), z(u.z) {}
    constexpr operator uint3() const { return {x, y, z}; }
};

// ------------------------------------------------------------------ context switch
#if defined(__x86_64__) && !defined(KC_USE_UCONTEXT)
// Saves the callee-saved registers on the old stack, stores the old stack pointer in *save, and
// resumes the stack `next` (SysV x86-64). MXCSR and the x87 control word are callee-saved too,
// but nothing changes them during a launch (set once, before the fibers start), so they are not
// switched. swapcontext() would also save the signal mask with a system call on every switch.
extern "C" void kc_switch(void** save, void* next);
asm(R"(
    .text
    .globl kc_switch
    .hidden kc_switch
    .type kc_switch,@function
kc_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size kc_switch, .-kc_switch
)");
#define KC_FAST_SWITCH 1
#endif

extern "C" char __start_kc_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_kc_shared[] __attribute__((weak, visibility("hidden")));

namespace kc {

enum State : unsigned char { RUN, BAR, WARP, DONE };
enum WOp : unsigned char { W_SYNC, W_XOR, W_DOWN, W_UP, W_IDX, W_BALLOT, W_ANY, W_ALL, W_RADD, W_RMIN, W_RMAX };
inline const char* wop_name(int op) {
    static const char* n[] = {"__syncwarp", "__shfl_xor_sync", "__shfl_down_sync", "__shfl_up_sync", "__shfl_sync",
                              "__ballot_sync", "__any_sync", "__all_sync", "__reduce_add_sync", "__reduce_min_sync",
                              "__reduce_max_sync"};
    return n[op];
}

struct Fiber {
    void* sp;
#ifndef KC_FAST_SWITCH
    ucontext_t ctx;
#endif
    uint3 tid;
    unsigned lin;          // linear thread index in the block
    State st;
    WOp op;
    const char* file;      // where it waits (barrier or warp collective)
    int line;
    unsigned mask;         // warp collective: lanes named
    int arg, width;
    uint64_t val, res;     // warp collective: value given, value received
    int pred;              // __syncthreads_count/and/or
};

struct Global {
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    Fiber* cur = nullptr;
    std::vector<Fiber> f;
    void* main_sp = nullptr;
#ifndef KC_FAST_SWITCH
    ucontext_t main_ctx;
#endif
    uint3 bidx{0, 0, 0};
    dim3 bdim, gdim;
    // fiber stacks: one mapping, each stack preceded by a guard page
    char* stacks = nullptr;
    size_t stack_bytes = 0, stack_stride = 0, nstacks = 0;
    // dynamic shared memory, its end against a guard page
    char* dyn = nullptr;
    char* dyn_map = nullptr;
    size_t dyn_map_len = 0;
    void (*body)(void**) = nullptr;
    void** args = nullptr;
    std::string err;
    // fault reporting (set in the signal handler)
    sigjmp_buf jb;
    volatile sig_atomic_t in_launch = 0;
    pthread_t launcher{};          // the OS thread running the launch (signals for others are passed on)
    volatile uintptr_t fault_addr = 0;
    volatile int fault_sig = 0, fault_write = -1, fault_in_fiber = 0;
    uint3 fault_tid{0, 0, 0}, fault_bid{0, 0, 0};
    uint64_t rng = 0;
    std::vector<unsigned> warp_waiting, warp_done;   // per warp: lanes at a collective, lanes exited
};
inline Global kc_global;   // one per module library; launches hold its lock
inline Global& G() { return kc_global; }

inline size_t page() { static size_t p = (size_t)sysconf(_SC_PAGESIZE); return p; }

inline std::string where() {
    Global& g = G();
    char b[128];
    std::snprintf(b, sizeof b, "block (%u,%u,%u) thread (%u,%u,%u)", g.bidx.x, g.bidx.y, g.bidx.z,
                  g.cur ? g.cur->tid.x : 0, g.cur ? g.cur->tid.y : 0, g.cur ? g.cur->tid.z : 0);
    return b;
}

inline void to_sched() {
    Global& g = G();
#ifdef KC_FAST_SWITCH
    kc_switch(&g.cur->sp, g.main_sp);
#else
    swapcontext(&g.cur->ctx, &g.main_ctx);
#endif
}
inline void to_fiber(Fiber& F) {
    Global& g = G();
    g.cur = &F;
#ifdef KC_FAST_SWITCH
    kc_switch(&g.main_sp, F.sp);
#else
    swapcontext(&g.main_ctx, &F.ctx);
#endif
}

// Called from kernel code: record the error and leave the fiber for good.
[[noreturn]] inline void fail(const std::string& msg) {
    Global& g = G();
    if (g.err.empty()) g.err = where() + ": " + msg;
    g.cur->st = DONE;
    to_sched();
    __builtin_trap();
}

inline void trampoline() {
    Global& g = G();
    g.body(g.args);
    g.cur->st = DONE;
    to_sched();
    __builtin_trap();
}

inline bool ensure_stacks(size_t n, size_t stack_bytes) {
    Global& g = G();
    if (g.stacks && g.nstacks >= n && g.stack_bytes == stack_bytes) return true;
    if (g.stacks) munmap(g.stacks, g.stack_stride * g.nstacks);
    size_t stride = stack_bytes + page();
    void* m = mmap(nullptr, stride * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) { g.stacks = nullptr; g.nstacks = 0; return false; }
    g.stacks = static_cast<char*>(m);
    g.stack_bytes = stack_bytes; g.stack_stride = stride; g.nstacks = n;
    for (size_t i = 0; i < n; ++i) mprotect(g.stacks + i * stride, page(), PROT_NONE);   // guard below each stack
    return true;
}

inline void init_fiber(Fiber& F, size_t i) {
    Global& g = G();
    char* lo = g.stacks + i * g.stack_stride + page();
    char* hi = lo + g.stack_bytes;
#ifdef KC_FAST_SWITCH
    uintptr_t top = reinterpret_cast<uintptr_t>(hi) & ~uintptr_t(15);
    void** sp = reinterpret_cast<void**>(top);
    *--sp = nullptr;                                  // trampoline's (never used) return address
    *--sp = reinterpret_cast<void*>(&trampoline);     // where kc_switch's `ret` lands
    for (int k = 0; k < 6; ++k) *--sp = nullptr;      // rbp rbx r12 r13 r14 r15
    F.sp = sp;
#else
    getcontext(&F.ctx);
    F.ctx.uc_stack.ss_sp = lo;
    F.ctx.uc_stack.ss_size = g.stack_bytes;
    F.ctx.uc_link = nullptr;
    makecontext(&F.ctx, (void (*)())trampoline, 0);
#endif
}

inline uint32_t next_rand() {   // splitmix64, for the seeded order
    uint64_t z = (G().rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)(z ^ (z >> 31));
}
inline void make_order(std::vector<unsigned>& p, unsigned n, int order) {
    p.resize(n);
    for (unsigned k = 0; k < n; ++k) p[k] = order == 1 ? n - 1 - k : k;
    if (order == 2)
        for (unsigned k = n - 1; k > 0; --k) std::swap(p[k], p[next_rand() % (k + 1)]);
}

inline std::string site(const Fiber& F) {
    return std::string(F.file ? F.file : "?") + ":" + std::to_string(F.line);
}

inline unsigned popcount32(unsigned x) {   // without -mpopcnt __builtin_popcount is a libgcc call
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    return (((x + (x >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24;
}

// ------------------------------------------------------------------ warp collectives
// Lanes of warp w (threads 32w .. 32w+31 of the block) that exist.
inline unsigned lanes_of(unsigned w) {
    unsigned n = G().f.size(), lo = w * 32, hi = std::min(n, lo + 32);
    return hi - lo == 32 ? 0xffffffffu : ((1u << (hi - lo)) - 1u);
}

// The collective lane `lead` waits at completes when every existing, non-exited lane named in its
// mask waits at the same kind of collective with the same mask. Returns true if released.
inline bool try_release(unsigned lead) {
    Global& g = G();
    Fiber& L = g.f[lead];
    unsigned w = lead / 32, base = w * 32, mask = L.mask & lanes_of(w);
    unsigned here = 0;
    for (unsigned j = 0; j < 32; ++j) {
        if (!((mask >> j) & 1)) continue;
        Fiber& F = g.f[base + j];
        if (F.st == DONE) continue;
        if (F.st != WARP || F.mask != L.mask || F.op != L.op) return false;
        here |= 1u << j;
    }
    uint64_t ballot = 0; bool all = true, any = false;
    uint32_t radd = 0; uint32_t rmin = 0xffffffffu, rmax = 0; int32_t smin = INT32_MAX, smax = INT32_MIN;
    for (unsigned j = 0; j < 32; ++j) {
        if (!((here >> j) & 1)) continue;
        Fiber& F = g.f[base + j];
        bool p = F.val != 0;
        if (p) ballot |= 1u << j;
        all &= p; any |= p;
        radd += (uint32_t)F.val;
        rmin = std::min(rmin, (uint32_t)F.val); rmax = std::max(rmax, (uint32_t)F.val);
        smin = std::min(smin, (int32_t)(uint32_t)F.val); smax = std::max(smax, (int32_t)(uint32_t)F.val);
    }
    for (unsigned j = 0; j < 32; ++j) {
        if (!((here >> j) & 1)) continue;
        Fiber& F = g.f[base + j];
        unsigned wd = (unsigned)F.width, seg = j / wd * wd, src = j;
        switch (F.op) {
            case W_XOR: src = j ^ (unsigned)F.arg; if (src / wd * wd > seg) src = j; break;
            case W_DOWN: src = (j - seg) + (unsigned)F.arg < wd ? j + (unsigned)F.arg : j; break;
            case W_UP: src = (j - seg) >= (unsigned)F.arg ? j - (unsigned)F.arg : j; break;
            case W_IDX: src = seg + ((unsigned)F.arg % wd); break;
            default: break;
        }
        switch (F.op) {
            case W_BALLOT: F.res = ballot; break;
            case W_ANY: F.res = any; break;
            case W_ALL: F.res = all; break;
            case W_RADD: F.res = radd; break;
            case W_RMIN: F.res = F.arg ? (uint32_t)smin : rmin; break;   // arg: signed
            case W_RMAX: F.res = F.arg ? (uint32_t)smax : rmax; break;
            case W_SYNC: F.res = 0; break;
            default:
                if (src >= 32 || base + src >= g.f.size() || !((L.mask >> src) & 1)) {
                    F.res = ~uint64_t(0);        // source lane not taking part: undefined on a GPU, poison here
                } else if (g.f[base + src].st == DONE) {
                    g.cur = &F;
                    g.err = where() + ": " + wop_name(F.op) + " at " + site(F) + " reads lane " + std::to_string(src) +
                            ", which is named in the mask but has exited without reaching it (divergent warp collective)";
                    return false;
                } else {
                    F.res = g.f[base + src].val;
                }
        }
    }
    for (unsigned j = 0; j < 32; ++j)
        if ((here >> j) & 1) g.f[base + j].st = RUN;
    g.warp_waiting[w] -= popcount32(here);
    return true;
}

// Cheap test before try_release: have enough lanes of the warp arrived or exited?
inline bool may_release(unsigned lead) {
    Global& g = G();
    unsigned w = lead / 32;
    return g.warp_waiting[w] + g.warp_done[w] >= (unsigned)popcount32(g.f[lead].mask & lanes_of(w));
}

// Nothing can run: explain why (a divergent barrier or collective) in g.err.
inline void diagnose_stall() {
    Global& g = G();
    unsigned n = g.f.size(), done = 0, bar = 0;
    const Fiber* fb = nullptr; const Fiber* fw = nullptr;
    for (auto& F : g.f) {
        if (F.st == DONE) ++done;
        else if (F.st == BAR) { ++bar; if (!fb) fb = &F; }
        else if (F.st == WARP && !fw) fw = &F;
    }
    char b[512];
    if (fw) {
        unsigned w = fw->lin / 32, base = w * 32, mask = fw->mask & lanes_of(w);
        std::string other = "another collective";
        for (unsigned j = 0; j < 32; ++j) {
            if (!((mask >> j) & 1)) continue;
            const Fiber& F = g.f[base + j];
            if (F.st == BAR) { other = "__syncthreads at " + site(F); break; }
            if (F.st == WARP && (F.mask != fw->mask || F.op != fw->op)) {
                char m[64]; std::snprintf(m, sizeof m, " with mask 0x%08x", F.mask);
                other = std::string(wop_name(F.op)) + " at " + site(F) + m; break;
            }
        }
        std::snprintf(b, sizeof b, "block (%u,%u,%u): thread %u waits at %s (%s, mask 0x%08x), but a lane it names waits at %s "
                      "(divergent warp collective: every non-exited lane named in the mask must reach the same one)",
                      g.bidx.x, g.bidx.y, g.bidx.z, fw->lin, wop_name(fw->op), site(*fw).c_str(), fw->mask, other.c_str());
    } else {
        std::snprintf(b, sizeof b, "block (%u,%u,%u): deadlock (%u of %u threads at barriers, %u exited)",
                      g.bidx.x, g.bidx.y, g.bidx.z, bar, n, done);
    }
    g.err = b;
}

// Every thread not at RUN: release a barrier if all threads wait at the same one.
// Returns 1 released, 0 block finished, -1 error.
inline int release_barrier() {
    Global& g = G();
    unsigned n = g.f.size(), done = 0, bar = 0, count = 0;
    const Fiber* first = nullptr;
    for (auto& F : g.f) {
        if (F.st == DONE) { ++done; continue; }
        if (F.st != BAR) continue;
        ++bar; count += F.pred != 0;
        if (!first) first = &F;
        else if (F.line != first->line || (F.file != first->file && std::strcmp(F.file, first->file) != 0)) {
            char b[512];
            std::snprintf(b, sizeof b, "block (%u,%u,%u): threads %u and %u wait at different __syncthreads (%s and %s): "
                          "a barrier inside a branch that not every thread takes", g.bidx.x, g.bidx.y, g.bidx.z,
                          first->lin, F.lin, site(*first).c_str(), site(F).c_str());
            g.err = b; return -1;
        }
    }
    if (done == n) return 0;
    if (bar + done != n) { diagnose_stall(); return -1; }
    if (done) {
        unsigned ex = 0;
        for (auto& F : g.f) if (F.st == DONE) { ex = F.lin; break; }
        char b[512];
        std::snprintf(b, sizeof b, "block (%u,%u,%u): __syncthreads at %s is reached by %u of %u threads; the others exited "
                      "(thread %u did): a barrier after an early return or inside an `if` is undefined on a GPU",
                      g.bidx.x, g.bidx.y, g.bidx.z, site(*first).c_str(), bar, n, ex);
        g.err = b; return -1;
    }
    for (auto& F : g.f) {
        F.st = RUN;
        F.res = F.op == W_ALL ? (count == n) : F.op == W_ANY ? (count > 0) : count;
    }
    return 1;
}

inline bool run_block(int order, std::vector<unsigned>& perm) {
    Global& g = G();
    unsigned n = g.f.size(), nw = (n + 31) / 32;
    g.warp_waiting.assign(nw, 0);
    g.warp_done.assign(nw, 0);
    make_order(perm, n, order);
    for (;;) {
        if (order == 2) make_order(perm, n, order);       // a fresh random order for every pass
        bool ran = false;
        for (unsigned k = 0; k < n; ++k) {
            Fiber& F = g.f[perm[k]];
            if (F.st != RUN) continue;
            to_fiber(F);
            ran = true;
            if (!g.err.empty()) return false;
            if (F.st == WARP) {                           // maybe the last lane its collective waited for
                ++g.warp_waiting[F.lin / 32];
                if (may_release(F.lin)) try_release(F.lin);
                if (!g.err.empty()) return false;
            } else if (F.st == DONE) {                    // an exit can complete a collective too
                ++g.warp_done[F.lin / 32];
                unsigned base = F.lin / 32 * 32;
                for (unsigned j = base; j < std::min(n, base + 32); ++j)
                    if (g.f[j].st == WARP) { if (may_release(j)) try_release(j); break; }
                if (!g.err.empty()) return false;
            }
        }
        if (ran) continue;
        bool any = false;                                  // collectives that completed through exits
        for (unsigned j = 0; j < n; ++j)
            if (g.f[j].st == WARP && try_release(j)) any = true;
        if (!g.err.empty()) return false;
        if (any) continue;
        int r = release_barrier();
        if (r == 0) return true;
        if (r < 0) return false;
    }
}

// ------------------------------------------------------------------ signals
struct SavedSignals {
    struct sigaction segv, bus, vt;
    stack_t alt;
    struct itimerval timer;
};
inline char* alt_stack() { static char s[1 << 16]; return s; }

inline void on_signal(int sig, siginfo_t* si, void* uc) {
    Global& g = G();
    if (!g.in_launch || !pthread_equal(pthread_self(), g.launcher)) {
        if (sig == SIGVTALRM) {                       // the process-wide CPU timer hit another thread
            if (g.in_launch) pthread_kill(g.launcher, sig);
            return;
        }
        signal(sig, SIG_DFL);                         // not ours: the fault repeats and ends the process
        return;
    }
    g.fault_sig = sig;
    g.fault_addr = reinterpret_cast<uintptr_t>(si->si_addr);
#if defined(__x86_64__) && defined(REG_ERR)
    g.fault_write = sig == SIGVTALRM ? -1 : (int)((static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_ERR] >> 1) & 1);
#else
    (void)uc; g.fault_write = -1;
#endif
    g.fault_in_fiber = g.cur != nullptr;
    if (g.cur) g.fault_tid = g.cur->tid;
    g.fault_bid = g.bidx;
    g.in_launch = 0;
    siglongjmp(g.jb, 1);
}

inline void install_signals(SavedSignals& s, double cpu_limit_s) {
    stack_t st{};
    st.ss_sp = alt_stack(); st.ss_size = 1 << 16; st.ss_flags = 0;
    sigaltstack(&st, &s.alt);
    struct sigaction sa{};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &s.segv);
    sigaction(SIGBUS, &sa, &s.bus);
    sigaction(SIGVTALRM, &sa, &s.vt);
    struct itimerval it{};
    if (cpu_limit_s > 0) {
        it.it_value.tv_sec = (time_t)cpu_limit_s;
        it.it_value.tv_usec = (suseconds_t)((cpu_limit_s - (double)(time_t)cpu_limit_s) * 1e6);
    }
    setitimer(ITIMER_VIRTUAL, &it, &s.timer);
}
inline void restore_signals(SavedSignals& s) {
    struct itimerval none{};
    setitimer(ITIMER_VIRTUAL, &s.timer, &none);
    sigaction(SIGSEGV, &s.segv, nullptr);
    sigaction(SIGBUS, &s.bus, nullptr);
    sigaction(SIGVTALRM, &s.vt, nullptr);
    if (s.alt.ss_flags & SS_DISABLE) { stack_t off{}; off.ss_flags = SS_DISABLE; sigaltstack(&off, nullptr); }
    else sigaltstack(&s.alt, nullptr);
}

// ------------------------------------------------------------------ guarded buffers
// A copy of an argument's bytes (or of dynamic shared memory) whose end lies at most 15 bytes
// before an inaccessible page, with another inaccessible page before it. The bytes between the
// copy and the guard pages are 0xFF (a NaN for fp16/fp32): writes there are found after the
// launch, reads give NaN. With at_start the copy starts at the lower guard page instead, so an
// index below zero faults (the reverse order uses that placement; the others the upper one).
struct Buf { char* map; size_t map_len; char* data; size_t data_len; char* p; size_t len; };

// Mappings come back to a small pool and are reused for the next request of the same size:
// a launch maps a buffer per array argument, and mmap + page faults per launch cost more than
// the kernel for small arrays.
struct Pool { std::vector<std::pair<char*, size_t>> free; size_t bytes = 0; };
inline Pool& pool() { static Pool p; return p; }
inline char* map_get(size_t map_len) {
    Pool& P = pool();
    for (size_t i = 0; i < P.free.size(); ++i)
        if (P.free[i].second == map_len) {
            char* m = P.free[i].first;
            P.free[i] = P.free.back(); P.free.pop_back(); P.bytes -= map_len;
            return m;
        }
    void* m = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    char* c = static_cast<char*>(m);
    mprotect(c, page(), PROT_NONE);
    mprotect(c + map_len - page(), page(), PROT_NONE);
    return c;
}
inline void map_put(char* map, size_t map_len) {
    Pool& P = pool();
    mprotect(map + page(), map_len - 2 * page(), PROT_READ | PROT_WRITE);     // undo a read-only protect
    if (P.free.size() >= 256 || P.bytes + map_len > (size_t(512) << 20)) { munmap(map, map_len); return; }
    P.free.emplace_back(map, map_len); P.bytes += map_len;
}

// The caller fills [p, p + len); the slack around it is set to 0xFF here.
inline bool buf_alloc(Buf& b, size_t len, size_t mis, bool at_start = false) {
    size_t ps = page(), data_len = (len + mis + 32 + ps - 1) / ps * ps;
    size_t map_len = data_len + 2 * ps;
    char* m = map_get(map_len);
    if (!m) return false;
    b.map = m; b.map_len = map_len;
    b.data = b.map + ps; b.data_len = data_len;
    uintptr_t end = reinterpret_cast<uintptr_t>(b.data + data_len);
    uintptr_t p = ((end - len - mis) & ~uintptr_t(15)) + mis;
    if (p + len > end) p -= 16;
    if (at_start) p = reinterpret_cast<uintptr_t>(b.data) + mis;   // reads before the start fault instead
    b.p = reinterpret_cast<char*>(p); b.len = len;
    std::memset(b.data, 0xFF, b.p - b.data);
    std::memset(b.p + len, 0xFF, b.data + data_len - (b.p + len));
    return true;
}

}  // namespace kc

// ------------------------------------------------------------------ exported API (ctypes)
extern "C" {

__attribute__((visibility("default"))) const char* kc_error() { return kc::G().err.c_str(); }

// Fault details of the last launch that failed with code 2: address, signal, write (1) / read (0) / unknown (-1).
__attribute__((visibility("default"))) void kc_fault(uint64_t* addr, int* sig, int* write, unsigned* ids) {
    kc::Global& g = kc::G();
    *addr = g.fault_addr; *sig = g.fault_sig; *write = g.fault_write;
    ids[0] = g.fault_bid.x; ids[1] = g.fault_bid.y; ids[2] = g.fault_bid.z;
    ids[3] = g.fault_tid.x; ids[4] = g.fault_tid.y; ids[5] = g.fault_tid.z; ids[6] = g.fault_in_fiber;
}

// out[0..5] = map, map_len, data, data_len, p (the copy's address), len
__attribute__((visibility("default"))) int kc_buf_alloc(uint64_t len, uint64_t mis, int at_start, uint64_t* out) {
    kc::Buf b;
    if (!kc::buf_alloc(b, len, mis & 15, at_start != 0)) return 1;
    out[0] = (uint64_t)b.map; out[1] = b.map_len; out[2] = (uint64_t)b.data; out[3] = b.data_len;
    out[4] = (uint64_t)b.p; out[5] = b.len;
    return 0;
}
// Index of the first changed canary byte relative to the copy (negative: before it), or INT64_MIN.
__attribute__((visibility("default"))) int64_t kc_buf_check(const uint64_t* b) {
    const unsigned char* data = (const unsigned char*)b[2];
    const unsigned char* p = (const unsigned char*)b[4];
    const unsigned char* end = data + b[3];
    for (const unsigned char* q = data; q < p; ++q) if (*q != 0xFF) return (int64_t)(q - p);
    for (const unsigned char* q = p + b[5]; q < end; ++q) if (*q != 0xFF) return (int64_t)(q - p);
    return INT64_MIN;
}
__attribute__((visibility("default"))) int kc_buf_protect(const uint64_t* b, int writable) {
    return mprotect((void*)b[2], b[3], writable ? PROT_READ | PROT_WRITE : PROT_READ);
}
__attribute__((visibility("default"))) void kc_buf_free(const uint64_t* b) { kc::map_put((char*)b[0], b[1]); }

}  // extern "C"

namespace kc {
// One launch: every block in the order asked, each block's threads as fibers.
// Returns 0, 1 (error in g.err), 2 (memory fault: kc_fault), 3 (CPU-time limit).
inline int launch(void (*body)(void**), void** args, const unsigned* grid, const unsigned* block, uint64_t smem,
                  int order, uint64_t seed, int ftz, double cpu_limit_s, uint64_t stack_bytes) {
    Global& g = G();
    struct Hold { pthread_mutex_t* m; ~Hold() { pthread_mutex_unlock(m); } } hold{&g.lock};
    pthread_mutex_lock(&g.lock);
    g.err.clear(); g.cur = nullptr; g.fault_addr = 0; g.fault_sig = 0;
    unsigned n = block[0] * block[1] * block[2];
    unsigned long long nb = (unsigned long long)grid[0] * grid[1] * grid[2];
    if (!ensure_stacks(n, stack_bytes)) { g.err = "cannot map fiber stacks"; return 1; }
    Buf dyn;
    if (!buf_alloc(dyn, smem, 0)) { g.err = "cannot map dynamic shared memory"; return 1; }
    g.dyn = dyn.p; g.dyn_map = dyn.map; g.dyn_map_len = dyn.map_len;
    g.body = body; g.args = args; g.bdim = dim3(block[0], block[1], block[2]); g.gdim = dim3(grid[0], grid[1], grid[2]);
    g.rng = seed;
    g.f.assign(n, Fiber{});
    std::vector<unsigned> perm;
    std::vector<unsigned long long> blocks(nb);
    for (unsigned long long b = 0; b < nb; ++b) blocks[b] = order == 1 ? nb - 1 - b : b;
    if (order == 2)
        for (unsigned long long b = nb - 1; b > 0 && nb > 1; --b) std::swap(blocks[b], blocks[next_rand() % (b + 1)]);
#if defined(__x86_64__)
    unsigned csr = _mm_getcsr();
    _mm_setcsr(ftz ? (csr | 0x8040) : (csr & ~0x8040u));   // FTZ|DAZ as NVRTC's -ftz=true
#endif
    SavedSignals saved;
    install_signals(saved, cpu_limit_s);
    int rc = 0;
    g.launcher = pthread_self();
    g.in_launch = 1;
    if (sigsetjmp(g.jb, 1) == 0) {
        for (unsigned long long b : blocks) {
            g.bidx = {unsigned(b % grid[0]), unsigned(b / grid[0] % grid[1]), unsigned(b / grid[0] / grid[1])};
            if (__start_kc_shared != __stop_kc_shared)
                std::memset(__start_kc_shared, 0xFF, __stop_kc_shared - __start_kc_shared);
            std::memset(dyn.data, 0xFF, dyn.data_len);
            for (unsigned i = 0; i < n; ++i) {
                Fiber& F = g.f[i];
                F = Fiber{};
                F.lin = i; F.st = RUN;
                F.tid = {i % block[0], i / block[0] % block[1], i / (block[0] * block[1])};
                init_fiber(F, i);
            }
            if (!run_block(order, perm)) { rc = 1; break; }
        }
        g.in_launch = 0;
    } else {
        rc = g.fault_sig == SIGVTALRM ? 3 : 2;
    }
    g.cur = nullptr;
    restore_signals(saved);
#if defined(__x86_64__)
    _mm_setcsr(csr);
#endif
    map_put(dyn.map, dyn.map_len);
    g.dyn = nullptr;
    if (rc == 2) {   // say where a fault in a stack's guard page came from
        uintptr_t a = g.fault_addr, lo = (uintptr_t)g.stacks, hi = lo + g.stack_stride * g.nstacks;
        if (a >= lo && a < hi && (a - lo) % g.stack_stride < page()) {
            g.err = "stack overflow of a CUDA thread (local arrays too large for the fiber stack; see stack_kb)";
            rc = 1;
        } else if (a >= (uintptr_t)dyn.map && a < (uintptr_t)dyn.map + dyn.map_len) {
            char b[256];
            std::snprintf(b, sizeof b, "block (%u,%u,%u) thread (%u,%u,%u): out-of-bounds access to dynamic shared memory "
                          "(byte %lld of a %llu-byte extern __shared__ array)", g.fault_bid.x, g.fault_bid.y, g.fault_bid.z,
                          g.fault_tid.x, g.fault_tid.y, g.fault_tid.z, (long long)(a - (uintptr_t)dyn.p),
                          (unsigned long long)smem);
            g.err = b; rc = 1;
        }
    }
    return rc;
}
inline void* dyn_smem() { return G().dyn; }
}  // namespace kc
