import io.agentnest.ExecResult;
import io.agentnest.Sandbox;

public class Quickstart {
  public static void main(String[] args) {
    try (Sandbox sandbox = Sandbox.create()) {                 // default: Docker, hardened, no network
      ExecResult res = sandbox.runCode("a = 10; print(a * 2)");   // persistent Python session
      System.out.println(res.output());                       // "20\n"
      sandbox.runCode("b = a + 1");
      System.out.println(sandbox.runCode("b").result());      // "11": value of the last expression
      ExecResult sh = sandbox.exec("ls -la /workspace");      // shell command
      sandbox.files().write("data/in.csv", "a,b\n1,2\n");     // path-safe file API
      System.out.println(sh.exitCode() + " " + sandbox.files().list("data"));
    }                                                          // destroy(): idempotent, also on close()
  }
}
