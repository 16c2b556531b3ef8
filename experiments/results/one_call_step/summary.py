"""Prints a table of the runs under the folder run.sh wrote (argument)."""
import glob, json, os, sys

out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/one_call_step"
print("| run | side | plan | pre-training s | predicted s | measured/predicted | overhead s | busy/predicted per group | errors |")
print("|---|---|---|---:|---:|---:|---:|---|---|")
for path in sorted(glob.glob(os.path.join(out, "*", "result.json"))):
    name = os.path.basename(os.path.dirname(path))
    run, side = name.rsplit("-", 1)
    r = json.load(open(path))
    p = r.get("plan") or {}
    pred = p.get("predicted_seconds")
    groups = " ".join(
        "%.3f/%.3f" % (g.get("measured_busy_seconds", 0), g["predicted_window_seconds"]) for g in p.get("groups", []))
    text = ",".join(
        ("%d-%d" % (g["rbms"][0], g["rbms"][-1]) if len(g["rbms"]) > 1 else "%d" % g["rbms"][0])
        + ("x%d" % g["replicas"] if g["replicas"] > 1 else "") for g in p.get("groups", []))
    errs = " ".join("%.5f" % x["final_recon_error"] for x in r.get("rbms", []))
    ratio = "%.3f" % (r["pretrain_seconds"] / pred) if pred else ""
    print("| %s | %s | %s | %.1f | %s | %s | %s | %s | %s |" % (
        run, side, text or "greedy", r["pretrain_seconds"], "%.1f" % pred if pred else "", ratio,
        "%.1f" % r["overhead_seconds"] if r.get("overhead_seconds") is not None else "", groups, errs))
