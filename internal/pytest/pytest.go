// Package pytest finds a Python 3 with the modules a test needs (Debian's
// python3-numpy, python3-sklearn), so that tests that check pipedbn against
// NumPy can run it, or skip saying what to install.
package pytest

import (
	"os/exec"
	"strings"
	"testing"
)

// candidates are tried in order: the python3 on PATH (which may be a
// pyenv shim without Debian's modules), then Debian's.
var candidates = []string{"python3", "/usr/bin/python3"}

// debPackage names the Debian package of a module, for the skip message.
var debPackage = map[string]string{"numpy": "python3-numpy", "sklearn": "python3-sklearn"}

// Find returns the first Python 3 that imports every module, or "" and
// why none does.
func Find(modules ...string) (string, string) {
	imports := "import " + strings.Join(modules, ", ")
	var tried []string
	for _, c := range candidates {
		path, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		if err := exec.Command(path, "-c", imports).Run(); err == nil {
			return path, ""
		}
		tried = append(tried, path)
	}
	var pkgs []string
	for _, m := range modules {
		if p, ok := debPackage[m]; ok {
			pkgs = append(pkgs, p)
		} else {
			pkgs = append(pkgs, m)
		}
	}
	if len(tried) == 0 {
		return "", "no python3 (apt-get install python3 " + strings.Join(pkgs, " ") + ")"
	}
	return "", "no python3 with " + strings.Join(modules, ", ") + " (tried " + strings.Join(tried, ", ") + "; apt-get install " + strings.Join(pkgs, " ") + ")"
}

// Python returns a Python 3 that imports every module, or skips t saying
// which is missing and what to install.
func Python(t testing.TB, modules ...string) string {
	t.Helper()
	path, why := Find(modules...)
	if path == "" {
		t.Skip("skipping: " + why)
	}
	return path
}

// Run runs script with the Python py and args, failing t with its output
// if it fails; it returns the script's stdout.
func Run(t testing.TB, py, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-c", script}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", py, err, stderr.String())
	}
	return string(out)
}
