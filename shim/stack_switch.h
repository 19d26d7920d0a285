/* A function run on another stack: run_on_stack switches rsp around one call, in x86-64
 * assembly, where this build may (DECISION_OWN_STACK: not under a sanitizer, whose runtime
 * tracks the stack, and only on x86-64; elsewhere the call is made on the caller's stack).
 * Owns the switch alone: which stack, what runs on it and under which claim are the
 * gate's (shim/gate.c). Inline, as it was in gate.c: the decision runs no function more
 * (shim/decision_path.ld), and its caller no frame more. */
#ifndef SHIM_STACK_SWITCH_H
#define SHIM_STACK_SWITCH_H

/* Sanitizer builds, whose runtimes track the stack, decide on the caller's. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DECISION_OWN_STACK 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DECISION_OWN_STACK 0
#endif
#endif
#if !defined(DECISION_OWN_STACK) && defined(__x86_64__)
#define DECISION_OWN_STACK 1
#elif !defined(DECISION_OWN_STACK)
#define DECISION_OWN_STACK 0
#endif

/* fn(arg) on the stack whose top is top (16-byte aligned): rsp switched, the call made,
 * rsp restored; every register the call may change is declared so. */
static inline void run_on_stack(void (*fn)(void *), void *arg, void *top)
{
#if DECISION_OWN_STACK
	__asm__ volatile("mov %%rsp, %%rbx\n\t"
			 "mov %[top], %%rsp\n\t"
			 "call *%[fn]\n\t"
			 "mov %%rbx, %%rsp"
			 : "+D"(arg), [fn] "+S"(fn), [top] "+d"(top)
			 :
			 : "rbx", "rax", "rcx", "r8", "r9", "r10", "r11", "memory", "cc", "xmm0", "xmm1", "xmm2",
			   "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
			   "xmm13", "xmm14", "xmm15", "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)",
			   "st(7)");
#else
	(void)top;
	fn(arg);
#endif
}

#endif
