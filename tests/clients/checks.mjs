// Check bookkeeping shared by the Node scenarios: every check is declared up front, so a
// scenario that crashes or hangs still reports the checks it never reached as failures.

export class Checks {
  constructor(prefix, names) {
    this.prefix = prefix;
    this.pending = new Set(names);
    this.failed = 0;
  }

  pass(name, detail = "") {
    this.#report(name, true, detail);
  }

  fail(name, detail) {
    this.#report(name, false, detail);
  }

  /** Runs `body`; an exception fails the check with its message. */
  async run(name, body) {
    try {
      const detail = await body();
      this.pass(name, detail ?? "");
    } catch (error) {
      this.fail(name, error instanceof Error ? error.message : String(error));
    }
  }

  /** Fails every check that was never reported; returns the process exit code. */
  finish(reason = "not reached") {
    for (const name of [...this.pending]) this.fail(name, reason);
    return this.failed === 0 ? 0 : 1;
  }

  #report(name, ok, detail) {
    if (!this.pending.delete(name)) throw new Error(`check reported twice or undeclared: ${name}`);
    if (!ok) this.failed += 1;
    const suffix = detail ? ` (${detail})` : "";
    console.log(`${ok ? "PASS" : "FAIL"} ${this.prefix}: ${name}${suffix}`);
  }
}

/** Prints a diagnostic line (what the client received); run.sh shows it indented. */
export function note(text) {
  console.log(`  # ${text}`);
}

export function assert(condition, message) {
  if (!condition) throw new Error(message);
}

/** Rejects after `ms` with `what` in the message: a hang guard, never a timed assertion. */
export function guard(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer after ${ms / 1000} s: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
