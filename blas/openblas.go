//go:build !purego

package blas

/*
#cgo LDFLAGS: -lopenblas
#include <stdlib.h>
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
char *openblas_get_corename(void);
// Present in builds with DYNAMIC_ARCH (Debian's, and the static library the
// images link), which pick their kernels for the CPU when they load; weak,
// so that a build without them still links.
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));

static int pipedbn_can_choose_core(void) {
	return gotoblas_dynamic_init != 0 && gotoblas_dynamic_quit != 0;
}

// pipedbn_choose_core makes OpenBLAS pick its kernels again as
// OPENBLAS_CORETYPE=name says. Only before any BLAS call.
static void pipedbn_choose_core(const char *name) {
	setenv("OPENBLAS_CORETYPE", name, 1);
	gotoblas_dynamic_quit();
	gotoblas_dynamic_init();
}
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/cpu"
	"gonum.org/v1/netlib/blas/netlib"
)

const implName = "openblas"

var impl netlib.Implementation

// SetThreads sets how many threads OpenBLAS may use for one call; n < 1 means 1.
// It is process-wide: a worker sets it once, from its CPU budget.
func SetThreads(n int) {
	if n < 1 {
		n = 1
	}
	C.openblas_set_num_threads(C.int(n))
}

// Threads reports how many threads OpenBLAS uses.
func Threads() int { return int(C.openblas_get_num_threads()) }

// Core reports the CPU kernels OpenBLAS uses, as it names them
// ("SkylakeX", "Haswell", "Prescott").
func Core() string { return C.GoString(C.openblas_get_corename()) }

// coreNote says what init changed, or "".
var coreNote string

// CoreNote says, when OpenBLAS did not know this CPU and pipedbn chose its
// kernels instead, what it chose and why; "" otherwise.
func CoreNote() string { return coreNote }

// genericCore is what OpenBLAS falls back to for a CPU it does not know
// (one newer than the library): SSE3 kernels, several times slower than
// the AVX2 or AVX-512 ones such a CPU runs.
const genericCore = "Prescott"

// init chooses the kernels of this CPU's vector extensions where OpenBLAS
// fell back to its generic ones, which train CD-1 several times slower
// (measured in experiments/results/README.md, "Stage replicas and plans,
// second pass"). OPENBLAS_CORETYPE, when set, is the user's choice and is
// left alone.
func init() {
	if _, set := os.LookupEnv("OPENBLAS_CORETYPE"); set || Core() != genericCore || C.pipedbn_can_choose_core() == 0 {
		return
	}
	var core, why string
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512DQ:
		core, why = "SkylakeX", "AVX-512"
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		core, why = "Haswell", "AVX2 and FMA"
	default:
		return
	}
	name := C.CString(core)
	defer C.free(unsafe.Pointer(name))
	C.pipedbn_choose_core(name)
	os.Unsetenv("OPENBLAS_CORETYPE") // the processes this one starts decide for themselves
	coreNote = fmt.Sprintf("OpenBLAS did not know this CPU and chose its generic %s kernels; the CPU has %s, so pipedbn chose %s's instead, now %s (set OPENBLAS_CORETYPE to choose yourself)",
		genericCore, why, core, Core())
}
