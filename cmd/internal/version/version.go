// Package version says what a pipedbn binary was built from: its module
// version, VCS commit, Go toolchain, BLAS and wire format. `master version`
// and `slave version` print it, so that a bug report, or a master and a
// slave that will not talk, can be told apart by version.
package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/messages"
)

// Info is what a binary was built from.
type Info struct {
	// Module is the main module's path and Version its version: (devel)
	// for a build from a working tree, else the tag or pseudo-version.
	Module, Version string
	// Commit is the VCS revision ("unknown" when the build recorded none:
	// go build -buildvcs=false, or a tree outside version control) and
	// Modified whether the working tree had changes ("unknown" too).
	Commit, Modified string
	// Go is the toolchain's version, like go1.26.8.
	Go string
	// BLAS is the implementation the binary computes with, as result.json's
	// blas field names it (openblas or gonum), and BLASCore the kernels it
	// picked for this CPU.
	BLAS, BLASCore string
	// Wire is messages.Version: a master and its slaves must agree on it.
	Wire uint16
}

// Read returns the Info of the running binary.
func Read() Info {
	in := Info{Module: "unknown", Version: "unknown", Commit: "unknown", Modified: "unknown", Go: runtime.Version(),
		BLAS: blas.Name(), BLASCore: blas.Core(), Wire: messages.Version}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	in.Module, in.Version = bi.Main.Path, bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.modified":
			in.Modified = s.Value
		}
	}
	return in
}

// Write prints the Info of the running binary, one "name: value" a line,
// headed by the program's name (master or slave).
func Write(w io.Writer, program string) error {
	in := Read()
	_, err := fmt.Fprintf(w, "%s\nmodule: %s\nversion: %s\ncommit: %s\nmodified: %s\ngo: %s %s/%s\nblas: %s (core %s)\nwire format: %d\n",
		program, in.Module, in.Version, in.Commit, in.Modified, in.Go, runtime.GOOS, runtime.GOARCH, in.BLAS, in.BLASCore, in.Wire)
	return err
}
