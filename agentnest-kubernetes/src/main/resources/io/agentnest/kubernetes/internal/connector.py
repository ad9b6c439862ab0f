# Run by the exec that carries an agent's channel: hands the exec's stdio to pid 1 (holder.py),
# which starts the agent as its child, and exits with the agent's status once it ends. Only pid 1
# can hold the name: it binds it before any sandbox code runs and keeps it for the pod's life (its
# exit ends the pod). The peer's pid is not checked: gVisor reports SO_PEERCRED pids in the pod
# sandbox's namespace (the holder shows as 2 there), not the container's.
import array, json, os, socket, struct, sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect('\0agentnest-holder')
except OSError as e:
    sys.stderr.write('agentnest: this pod has no agent holder (%s): it predates this AgentNest version;'
                     ' destroy it and create a new sandbox\n' % e)
    os._exit(72)
s.sendmsg([json.dumps(sys.argv[1:]).encode()],
          [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [0, 1, 2]))])
n = os.open('/dev/null', os.O_RDWR)
for f in (0, 1, 2):
    os.dup2(n, f)
b = b''
while len(b) < 4:
    chunk = s.recv(4 - len(b))
    if not chunk:
        os._exit(74)
    b += chunk
code = struct.unpack('!i', b)[0]
os._exit(code & 255)
