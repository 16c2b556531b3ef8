"""The table of README.md from runs.csv beside it (localsgd's rows, one per run)."""
import csv, math, os, statistics as st

here = os.path.dirname(os.path.abspath(__file__))
rows = {}
for r in csv.DictReader(open(os.path.join(here, 'runs.csv'))):
    rows.setdefault(int(r['seed']), {})[int(r['workers'])] = (float(r['test_accuracy']), float(r['last_epoch_loss']))
print('| seed | 1 worker | 4 workers, S = 16, block momentum 0.5 | difference, points | last-epoch loss: 1 worker | 4 workers |')
print('|---:|---:|---:|---:|---:|---:|')
diffs = []
for s in sorted(rows):
    if 1 not in rows[s] or 4 not in rows[s]:
        continue
    a, b = rows[s][1], rows[s][4]
    diffs.append(100 * (b[0] - a[0]))
    print(f'| {s} | {a[0]:.4f} | {b[0]:.4f} | {diffs[-1]:+.2f} | {a[1]:.4f} | {b[1]:.4f} |')
t975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
n = len(diffs)
m = st.mean(diffs)
h = t975[n - 1] * st.stdev(diffs) / math.sqrt(n) if n > 1 else float('nan')
w1 = st.mean(rows[s][1][0] for s in rows if 4 in rows[s] and 1 in rows[s])
w4 = st.mean(rows[s][4][0] for s in rows if 4 in rows[s] and 1 in rows[s])
print(f'\n{n} seeds: 1 worker {100 * w1:.2f}%, 4 workers {100 * w4:.2f}%; 4 workers - 1 worker: '
      f'{m:+.2f} points, 95% CI [{m - h:+.2f}, {m + h:+.2f}] (paired t, {n - 1} df)')
