#!/usr/bin/env python3
"""Tables of a wire precision sweep: each RBM's final reconstruction error per
precision and seed, against float32's (the same seed's, and the mean over the
seeds), and the bytes of a window into each RBM (its bytes_in over the run's
windows).

    /usr/bin/python3 table.py SWEEP_DIR
"""
import glob, json, os, statistics, sys

runs = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "**", "result.json"), recursive=True)):
    r = json.load(open(path))
    cfg = os.path.basename(os.path.dirname(path))
    prec = cfg.split("middle_precision=")[1].split("_")[0]
    runs[(prec, r["seed"])] = r

precs = [p for p in ("float32", "float16", "uint8") if any(k[0] == p for k in runs)]
seeds = sorted({k[1] for k in runs})
L = len(next(iter(runs.values()))["rbms"])
err = {k: [b["final_recon_error"] for b in r["rbms"]] for k, r in runs.items()}
base = [statistics.mean(err[("float32", s)][i] for s in seeds) for i in range(L)]
rbms = " | ".join(f"RBM_{i+1}" for i in range(L))

print("Final reconstruction error per RBM (`final_recon_error`), and its ratio to the same seed's float32 run:\n")
print(f"| precision | seed | {rbms} |")
print("|---|---:|" + "---:|" * L)
for p in precs:
    for s in seeds:
        cells = [f"{err[(p, s)][i]:.6f} ({err[(p, s)][i] / err[('float32', s)][i]:.4f})" for i in range(L)]
        print(f"| {p} | {s} | " + " | ".join(cells) + " |")

print("\nMean over seeds " + ", ".join(map(str, seeds)) + " and its ratio to float32's mean; the rule: every RBM's within 1%:\n")
print(f"| precision | {rbms} | every RBM within 1% of float32's mean | worst seed against its float32 run |")
print("|---|" + "---:|" * L + "---|---:|")
for p in precs:
    cells, ok, worst = [], True, 1.0
    for i in range(L):
        m = statistics.mean(err[(p, s)][i] for s in seeds)
        ok = ok and abs(m / base[i] - 1) <= 0.01
        for s in seeds:
            q = err[(p, s)][i] / err[("float32", s)][i]
            worst = q if abs(q - 1) > abs(worst - 1) else worst
        cells.append(f"{m:.6f} ({m / base[i]:.4f})")
    print(f"| {p} | " + " | ".join(cells) + f" | {'yes' if ok else 'no'} | {worst:.4f} |")

spread = max(abs(err[("float32", s)][i] / base[i] - 1) for s in seeds for i in range(L))
print(f"\nfloat32's own seeds lie up to {100 * spread:.1f}% from their mean.")

print("\nBytes of one window into each RBM (`bytes_in` / `windows`: its values and B_i; into RBM_1, the master's data, float32):\n")
print("| precision | " + " | ".join(f"into RBM_{i+1}" for i in range(L)) + " |")
print("|---|" + "---:|" * L)
for p in precs:
    r = runs[(p, seeds[0])]
    cells = [f"{b['bytes_in'] / r['windows']:,.0f}" for b in r["rbms"]]
    print(f"| {p} | " + " | ".join(cells) + " |")
