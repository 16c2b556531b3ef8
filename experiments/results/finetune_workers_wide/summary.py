"""The table of README.md from the runs' result.json files (w<W>-s<seed>.json) beside it."""
import glob, json, math, os, statistics as st

here = os.path.dirname(os.path.abspath(__file__))
rows = {}
for f in sorted(glob.glob(os.path.join(here, 'w*-s*.json'))):
    w, s = os.path.basename(f)[:-5].split('-')
    ft = json.load(open(f))['finetune']
    rows.setdefault(int(s[1:]), {})[w] = (ft['test_accuracy'], ft['train_accuracy'], ft['history'][-1]['loss'], ft['seconds'])
print('| seed | 1 worker | 4 workers | difference, points | train accuracy, last loss: 1 worker | 4 workers |')
print('|---:|---:|---:|---:|---|---|')
diffs = []
for s in sorted(rows):
    a, b = rows[s]['w1'], rows[s]['w4']
    diffs.append(100 * (b[0] - a[0]))
    print(f'| {s} | {a[0]:.4f} | {b[0]:.4f} | {diffs[-1]:+.2f} | {a[1]:.4f}, {a[2]:.4f} | {b[1]:.4f}, {b[2]:.4f} |')
t975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
n = len(diffs)
m, h = st.mean(diffs), t975[n - 1] * st.stdev(diffs) / math.sqrt(n)
w1 = st.mean(rows[s]['w1'][0] for s in rows)
w4 = st.mean(rows[s]['w4'][0] for s in rows)
print(f'\n{n} seeds: 1 worker {100 * w1:.2f}%, 4 workers {100 * w4:.2f}%; 4 workers - 1 worker: '
      f'{m:+.2f} points, 95% CI [{m - h:+.2f}, {m + h:+.2f}] (paired t, {n - 1} df)')
