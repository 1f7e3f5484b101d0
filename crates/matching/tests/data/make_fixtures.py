# Regenerates tests/data/*.json from the shared bags (needs: pip install mcap mcap-ros2-support numpy).
# Run from crates/matching/tests/data; the shared bags are ../shared/bags beside the repository.
# Step 1 dumps each bag to /tmp/match/<bag>.json, step 2 writes the excerpts and full dumps.
import json, sys
from pathlib import Path
HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[4] / "shared"
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
for bag in ["arm_real","arm_sim","arm_ack","arm_split"]:
    path=SHARED/"bags"/bag/f"{bag}.mcap"
    cmd=dict(stamp_ns=[],log_time_ns=[],names=[],values=[],points=[])
    resp=dict(stamp_ns=[],log_time_ns=[],names=[],values=[])
    clock=dict(log_time_ns=[],clock_ns=[])
    with open(path,"rb") as f:
        r=make_reader(f,decoder_factories=[DecoderFactory()])
        for sch,ch,msg,dec in r.iter_decoded_messages():
            if ch.topic=="/arm_cmd":
                st=dec.header.stamp.sec*10**9+dec.header.stamp.nanosec
                cmd["stamp_ns"].append(st); cmd["log_time_ns"].append(msg.log_time)
                cmd["names"].append(list(dec.joint_names))
                cmd["values"].append(list(dec.points[0].positions) if dec.points else [])
                cmd["points"].append([(p.time_from_start.sec*10**9+p.time_from_start.nanosec, list(p.positions)) for p in dec.points])
            elif ch.topic=="/joint_states":
                st=dec.header.stamp.sec*10**9+dec.header.stamp.nanosec
                resp["stamp_ns"].append(st); resp["log_time_ns"].append(msg.log_time)
                resp["names"].append(list(dec.name)); resp["values"].append(list(dec.position))
            elif ch.topic=="/clock":
                clock["log_time_ns"].append(msg.log_time); clock["clock_ns"].append(dec.clock.sec*10**9+dec.clock.nanosec)
    json.dump(dict(cmd=cmd,resp=resp,clock=clock),open(f"/tmp/match/{bag}.json","w"))
    print(bag,len(cmd["stamp_ns"]),len(resp["stamp_ns"]),len(clock["clock_ns"]))

# ---- step 2 ----
# Builds compact fixtures (and full-bag dumps) from the /tmp/match/<bag>.json dumps.
import json, numpy as np
def fit_sim_to_wall(clock):
    lt=np.array(clock['log_time_ns'],dtype=np.float64); ck=np.array(clock['clock_ns'],dtype=np.float64)
    l0=lt[0]; c0=ck[0]
    a,b=np.polyfit(ck-c0, lt-l0, 1)
    res=(lt-l0)-(a*(ck-c0)+b)
    return (lambda s: np.round(l0+b+a*(np.array(s,dtype=np.float64)-c0)).astype(np.int64)), a, b, res.std()
def pack(s, names, t_lo=None, t_hi=None, stamps=None):
    st=np.array(stamps if stamps is not None else s['stamp_ns'],dtype=np.int64)
    idx=[i for i in range(len(st)) if (t_lo is None or st[i]>=t_lo) and (t_hi is None or st[i]<=t_hi)]
    assert all(n==s['names'][idx[0]] for n in [s['names'][i] for i in idx])
    t0=int(st[idx[0]])
    return dict(t0_ns=t0, stamp_rel_ns=[int(st[i]-t0) for i in idx],
                log_rel_ns=[int(s['log_time_ns'][i]-t0) for i in idx],
                names=s['names'][idx[0]], values=[[round(v,5) for v in s['values'][i]] for i in idx])
for bag in ["arm_real","arm_sim","arm_ack","arm_split"]:
    d=json.load(open(f"/tmp/match/{bag}.json"))
    c,r=d['cmd'],d['resp']
    rstamps=None; note=None
    if bag=="arm_split":
        f,a,b,sd=fit_sim_to_wall(d['clock']); rstamps=f(r['stamp_ns']).tolist()
        note=f"joint_states stamps mapped sim->wall by a linear fit of /clock values vs log time (slope {a:.6f}, residual std {sd/1e6:.3f} ms)"
        print(note)
    full=dict(bag=bag, mapping=note, cmd=pack(c,None), resp=pack(r,None,stamps=rstamps))
    json.dump(full, open(f"/tmp/match/full_{bag}.json","w"))
    if bag=="arm_ack":
        fx=full
    else:
        c0=c['stamp_ns'][0]; 
        rel_lo,rel_hi=(1.0e9,7.0e9)
        cmdp=pack(c,None,c0+rel_lo,c0+rel_hi)
        # responses: slightly wider than the command window so the delay search has data
        respp=pack(r,None,c0+rel_lo-0.1e9,c0+rel_hi+0.6e9,stamps=rstamps)
        fx=dict(bag=bag, mapping=note, cmd=cmdp, resp=respp)
    json.dump(fx, open(HERE/f"{bag}.json","w"), separators=(',',':'))
