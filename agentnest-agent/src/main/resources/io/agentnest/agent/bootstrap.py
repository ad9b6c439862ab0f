import os,sys
# Not dumpable (kept across fork, lost at execve): sandbox code runs as the same uid and must
# not read or write the agent's memory or open its channel fds through /proc.
try:
    import ctypes
    ctypes.CDLL(None).prctl(4,0,0,0,0)
except Exception:
    pass
# The agent link's token (Docker on runc): out of the environment before anything can inherit it.
t=os.environ.pop("AGENTNEST_LINK","")
k=os.fork()
if k:
    # pid 1, instead of Docker's --init (whose copies of the channel pipes sandbox code could
    # open): holds no channel fd, reaps orphans, ends with the agent.
    import signal
    signal.signal(signal.SIGINT,signal.SIG_IGN)
    n=os.open("/dev/null",os.O_RDWR)
    # Started by an exec (Kubernetes), keep stderr: containerd ends an exec's stdin once its
    # stderr is closed everywhere, and the agent points its own at /dev/null.
    for f in ((0,1,2) if os.getpid()==1 else (0,1)):
        os.dup2(n,f)
    os.close(n)
    while 1:
        try:
            p,s=os.wait()
        except ChildProcessError:
            os._exit(1)
        if p==k:
            os._exit(os.WEXITSTATUS(s) if os.WIFEXITED(s) else 128+os.WTERMSIG(s))
# The agent link ("socket:token"): the host listens in the read-only /run/agentnest until this
# connects with the token; the channel then bypasses the engine's attach path. The container's
# own stdin/stdout stay for another host that attaches (the agent reads them beside the link, and
# only them once it ends).
l=None
if t:
    import socket
    s=socket.socket(socket.AF_UNIX)
    try:
        p,_,t=t.rpartition(":");s.settimeout(60);s.connect(p);s.sendall(t.encode()+b"\n")
    except OSError as e:
        os.write(2,("agentnest: cannot reach the agent link: %s\n"%e).encode());os._exit(96)
    s.settimeout(None)
    l=(os.dup(0),os.dup(1))
    os.dup2(s.fileno(),0);os.dup2(s.fileno(),1);s.close()
del t
def r(n):
    b=b""
    while len(b)<n:
        c=os.read(0,n-len(b))
        if not c:
            sys.exit(97)
        b+=c
    return b
a=int(r(10));w=int(r(10));c=int(r(10))
g={"__name__":"__main__","AGENTNEST_WORKER_SOURCE":r(w).decode(),"AGENTNEST_STDIO":l}
src=r(a)
b=r(c) if c else b""
# The agent compiled by the host for this Python version, when it matches: no compile at start.
import _frozen_importlib_external as x
if len(b)>4 and b[:4]==x.MAGIC_NUMBER:
    import marshal
    code=marshal.loads(b[4:])
else:
    code=compile(src.decode(),"agentnest-agent.py","exec")
del a,w,c,b,src
exec(code,g)
