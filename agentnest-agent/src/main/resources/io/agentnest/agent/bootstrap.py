import os,sys
def r(n):
    b=b""
    while len(b)<n:
        c=os.read(0,n-len(b))
        if not c:
            sys.exit(97)
        b+=c
    return b
a=int(r(10));w=int(r(10))
g={"__name__":"__agentnest__","AGENTNEST_WORKER_SOURCE":r(w).decode()}
src=r(a).decode()
exec(compile(src,"agentnest-agent.py","exec"),g)
