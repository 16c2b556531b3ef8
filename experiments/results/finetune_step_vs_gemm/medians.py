# Medians of the interleaved rounds of the fine-tuning step benchmarks in
# the file named by the first argument: wall ns/op and the thread's
# cpu-ns/op, the ratio GEMMs/step of each (of the medians, and per round,
# sorted), and GFLOP/s on either clock.
import sys, re, statistics as st
d = {}
for line in open(sys.argv[1]):
    if not line.startswith("Benchmark"):
        continue
    f = line.split()
    name = f[0].removeprefix("Benchmark")
    vals = {f[i + 1]: float(f[i]) for i in range(2, len(f) - 1, 2)}
    d.setdefault(name, []).append(vals)
for shape in ["784_500_500_2000", "784_500_500_2000_Batch256", "64_32"]:
    s, g = d["TrainStep_" + shape], d["GEMMStep_" + shape]
    for unit in ["ns/op", "cpu-ns/op"]:
        sm = st.median(v[unit] for v in s); gm = st.median(v[unit] for v in g)
        per = sorted(b[unit] / a[unit] for a, b in zip(s, g))
        print(f"{shape:26} {unit:9} step {sm/1e6:7.3f} ms  GEMMs {gm/1e6:7.3f} ms  ratio of medians {gm/sm:.2f}  rounds {' '.join(f'{r:.2f}' for r in per)}")
    gf = st.median(v["GFLOP/s"] for v in s), st.median(v["GFLOP/s"] for v in g)
    # GFLOP/s is FLOPs per wall ns; times ns/op over cpu-ns/op, per CPU ns.
    gc = [st.median(v["GFLOP/s"] * v["ns/op"] / v["cpu-ns/op"] for v in x) for x in (s, g)]
    print(f"{shape:26} GFLOP/s medians: wall step {gf[0]:.1f}, GEMMs {gf[1]:.1f}; CPU step {gc[0]:.1f}, GEMMs {gc[1]:.1f}")
