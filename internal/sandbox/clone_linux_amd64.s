#include "textflag.h"

// clone(2) onto a new stack. The parent gets the child's pid (or -1 and
// the errno). The child, on the new stack, calls FN(c); FN does not return,
// but if it did the child would exit with status 127.
#define CLONE(FN) \
	MOVQ	flags+0(FP), DI \
	MOVQ	stack+8(FP), SI \
	MOVQ	c+16(FP), R12 \
	MOVQ	$0, DX \
	MOVQ	$0, R10 \
	MOVQ	$0, R8 \
	MOVQ	$56, AX /* SYS_clone */ \
	SYSCALL \
	CMPQ	AX, $0 \
	JEQ	child \
	CMPQ	AX, $0xfffffffffffff001 \
	JLS	ok \
	MOVQ	$-1, pid+24(FP) \
	NEGQ	AX \
	MOVQ	AX, errno+32(FP) \
	RET \
ok: \
	MOVQ	AX, pid+24(FP) \
	MOVQ	$0, errno+32(FP) \
	RET \
child: \
	SUBQ	$16, SP \
	MOVQ	R12, 0(SP) \
	CALL	FN(SB) \
exit: \
	MOVL	$127, DI \
	MOVL	$231, AX /* SYS_exit_group */ \
	SYSCALL \
	JMP	exit

// func cloneInit(flags, stack uintptr, c *childArgs) (pid uintptr, errno uintptr)
TEXT ·cloneInit(SB),NOSPLIT|NOFRAME,$0-40
	CLONE(·childMain)

// func cloneCommand(flags, stack uintptr, c *childArgs) (pid uintptr, errno uintptr)
TEXT ·cloneCommand(SB),NOSPLIT|NOFRAME,$0-40
	CLONE(·childCommand)
