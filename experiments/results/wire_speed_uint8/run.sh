#!/bin/bash
# Quiet-box timing: four equal 784x784 RBMs on 4 machines of 0.45 CPU, middle results as float32 or uint8.
M=/tmp/ftw/master
C=/work/main/experiments/equal4.yaml
O=/tmp/ftw/eq4
mkdir -p $O
$M run --config $C --set pretrain.mode=greedy --out $O/greedy > $O/greedy.log 2>&1
for p in float32 uint8; do
  $M run --config $C --set pretrain.mode=pipelined --set cluster.plan=one-per-rbm --set pretrain.middle_precision=$p --out $O/one-$p > $O/one-$p.log 2>&1
done
$M run --config $C --set pretrain.mode=pipelined --set cluster.plan=auto --out $O/auto-uint8 > $O/auto-uint8.log 2>&1
/usr/bin/python3 - <<'PY'
import json
O='/tmp/ftw/eq4'
g=json.load(open(O+'/greedy/result.json'))
gb=[r['busy_seconds']/r['batches'] for r in g['rbms']]
ge=[r['final_recon_error'] for r in g['rbms']]
print('greedy', round(g['pretrain_seconds'],1), [round(x*1000,1) for x in gb])
for n in ['one-float32','one-uint8','auto-uint8']:
    r=json.load(open(O+'/'+n+'/result.json'))
    b=[x['busy_seconds']/x['batches'] for x in r['rbms']]
    e=[x['final_recon_error'] for x in r['rbms']]
    print(n, round(r['pretrain_seconds'],1), 'speedup', round(g['pretrain_seconds']/r['pretrain_seconds'],2),
      'busy/greedy', [round(a/c,3) for a,c in zip(b,gb)], 'err/greedy', [round(a/c,3) for a,c in zip(e,ge)],
      'overhead', r.get('overhead_seconds'), 'predicted', (r.get('plan') or {}).get('predicted_seconds'))
PY
