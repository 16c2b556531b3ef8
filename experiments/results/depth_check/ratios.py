import json,glob,os,re,sys
# Each RBM's final_recon_error, pipelined / greedy (same DBN, epochs and
# seed; greedy does not depend on K, so the sweep runs it once for both).
root=sys.argv[1]
res={}
for d in glob.glob(root+'/layers=*'):
    if not os.path.exists(d+'/result.json'): continue
    r=json.load(open(d+'/result.json'))
    name=os.path.basename(d)
    f=dict(re.findall(r'(layers|epochs|k_batches|seed|mode)=([^_]+)',name))
    res[(f['layers'],int(f['epochs']),int(f.get('k_batches',0)),int(f['seed']),f['mode'])]=[x['final_recon_error'] for x in r['rbms']]
worst=0
for (layers,ep,k,seed,mode),e in sorted(res.items()):
    if mode!='pipelined': continue
    g=res.get((layers,ep,0,seed,'greedy'))
    if g is None: continue
    ratios=[p/q for p,q in zip(e,g)]
    worst=max(worst,max(ratios[1:]))
    print(layers, 'epochs',ep,'K',k,'seed',seed, ' '.join('%.3f'%x for x in ratios))
print('worst upper RBM ratio %.3f'%worst)
