import json,glob,os,sys
root=sys.argv[1]
res={}
for d in glob.glob(root+'/layers=*'):
    r=json.load(open(d+'/result.json'))
    name=os.path.basename(d); layers=name.split('_')[0]; seed=name.split('seed=')[1].split('_')[0]; mode=name.split('mode=')[1].split('_')[0]
    res[(layers,seed,mode)]=[x['final_recon_error'] for x in r['rbms']]
worst=0
for (layers,seed,mode),e in sorted(res.items()):
    if mode!='pipelined': continue
    g=res[(layers,seed,'greedy')]
    ratios=[p/q for p,q in zip(e,g)]
    worst=max(worst,max(ratios[1:]) if len(ratios)>1 else 0)
    print(layers.replace('layers=',''), 'seed',seed, ' '.join('%.3f'%x for x in ratios))
print('worst upper RBM ratio %.3f'%worst)
