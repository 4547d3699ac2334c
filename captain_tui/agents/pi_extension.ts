// captain's pi extension: the crew's pi reports to captain through `captain hook pi EVENT`.
//
// Written into the captain home per crew by captain_tui/agents/pi.py, which replaces the
// markers below with JSON literals (ASCII only, so no text can end a literal early): the
// argv that runs captain, the tools to gate and how long a gated call's hook may run.
// Loaded with `pi -e FILE`; it imports nothing from pi.
//
// - before_agent_start (every prompt, the wake line included): the hook prints at most one
//   JSON line {"message": TEXT}; TEXT (the unread mail) joins the prompt as a custom
//   message, which pi sends to the model as user content. captain counts the mail as read
//   once that line is written.
// - agent_end: the last assistant text goes to captain as an `idle` signal, with the path of
//   pi's session file, from which captain measures the turn's spend.
// - tool_call, for a tool [crew] pi_approval_tools names (none by default: pi asks about
//   nothing itself): the hook records an approval request and holds the call for the
//   captain's decision (docs/approvals.md). It prints {"decision": "allow"} (the call
//   runs), {"decision": "allow_session"} (and this tool's later calls in this pi session
//   run unasked), or {"decision": "deny", "reason": TEXT} (the call is blocked; the model
//   reads TEXT as its result). No decision (none in time, captain failing, the hook
//   killed): pi's own confirm dialog asks the person in the pane; never an allow. Without
//   a UI (print mode) the call is blocked.
// - tool_call, every call, first: the budget's gate (budgetGate below, the hook `budget`,
//   docs/budgets.md): at the assignment's budget it prints {"block": true, "reason": TEXT}
//   and the call is not run (nor held for approval).
//
// Fails open everywhere: whatever captain does (missing, slow, crashing, printing garbage),
// pi carries on (a gated call: to pi's confirm dialog). A hook gets HOOK_TIMEOUT_MS (a gated
// call's: GATE_TIMEOUT_MS), then is killed.
import { spawn } from "node:child_process";

const CAPTAIN: string[] = __CAPTAIN_ARGV__;
// lower-cased tool names; the captain's setting when the crew started
const GATED: string[] = __CAPTAIN_GATED__;
// [crew] approval_timeout plus a grace: the hook's own deadline always comes first
const GATE_TIMEOUT_MS: number = __CAPTAIN_GATE_TIMEOUT_MS__;
const HOOK_TIMEOUT_MS = 10000;
// what pi's dialog shows of a call: as captain's excerpt (state/crew/approvals.py)
const SHOWN_MAX = 200;
const NO_ANSWER =
	"The captain did not answer this approval request, and there is no one at a screen to ask: blocked.";
const MAX_OUTPUT = 4 * 1024 * 1024;
// Text the extension passes on is cut to this many UTF-16 units: captain reads a bounded
// stdin (hooks.MAX_INPUT) and fails open beyond it, which would lose the turn's signal or
// the mail (a pasted prompt of megabytes). captain keeps a short summary anyway.
const MAX_TEXT = 64 * 1024;

function clip(text: string): string {
	return text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) : text;
}

// One line of at most SHOWN_MAX characters, anything but letters, digits, punctuation,
// symbols and spaces escaped: what a model steered by a hostile repository wrote is shown
// in the pane, never obeyed by the terminal (controls, bidi and tag characters).
function shown(text: string): string {
	const line = text
		.slice(0, SHOWN_MAX * 8) // a write of megabytes: only its start can be shown
		.replace(/\s+/g, " ")
		.trim()
		.replace(/[^\p{L}\p{N}\p{P}\p{S} ]/gu, (c) => `\\u{${(c.codePointAt(0) ?? 0).toString(16)}}`);
	const chars = Array.from(line); // whole code points: never half a surrogate pair
	return chars.length > SHOWN_MAX ? `${chars.slice(0, SHOWN_MAX - 1).join("")}…` : line;
}

// As captain's hook puts it (hooks._what): the command, else the file and the rest. (The
// hook reads at most 16 MiB of input: a larger call fails it open, to pi's dialog.)
function what(input: unknown): string {
	try {
		if (input && typeof input === "object" && !Array.isArray(input)) {
			const fields = input as Record<string, unknown>;
			if (typeof fields.command === "string" && fields.command) return fields.command;
			if (typeof fields.path === "string" && fields.path) {
				const { path, ...rest } = fields;
				return Object.keys(rest).length ? `${path} ${JSON.stringify(rest)}` : path;
			}
		}
		return typeof input === "string" ? input : JSON.stringify(input) ?? "";
	} catch {
		return "";
	}
}

function hook(
	event: string,
	input: Record<string, unknown>,
	timeoutMs: number = HOOK_TIMEOUT_MS,
	signal?: AbortSignal,
): Promise<string> {
	return new Promise((resolve) => {
		let out = "";
		let done = false;
		const finish = (text: string) => {
			if (!done) {
				done = true;
				resolve(text);
			}
		};
		try {
			const child = spawn(CAPTAIN[0], [...CAPTAIN.slice(1), "hook", "pi", event], {
				stdio: ["pipe", "pipe", "ignore"], // captain's stderr notes would draw over pi
				timeout: timeoutMs,
				killSignal: "SIGKILL",
			});
			// pi's turn interrupted (Escape) while the hook holds a call: SIGTERM tells the
			// hook the agent moved on, and it closes the request (answered in the pane)
			const stop = () => child.kill("SIGTERM");
			signal?.addEventListener("abort", stop, { once: true });
			if (signal?.aborted) stop();
			child.on("error", () => finish(""));
			child.stdout.setEncoding("utf8");
			child.stdout.on("data", (chunk: string) => {
				if (out.length < MAX_OUTPUT) out += chunk;
			});
			child.on("close", () => {
				signal?.removeEventListener("abort", stop);
				finish(out);
			});
			child.stdin.on("error", () => undefined); // a hook that exits early: EPIPE
			child.stdin.end(JSON.stringify({ hook_event_name: event, ...input }));
		} catch {
			finish("");
		}
	});
}

function answer(out: string): Record<string, unknown> | undefined {
	const line = out.split("\n").find((l) => l.trim() !== "");
	if (!line) return undefined;
	try {
		const data = JSON.parse(line);
		return data && typeof data === "object" && !Array.isArray(data) ? data : undefined;
	} catch {
		return undefined;
	}
}

function lastAssistant(messages: any[]): { text: string; stopReason: string; error: string } {
	const last = [...(Array.isArray(messages) ? messages : [])]
		.reverse()
		.find((m) => m && m.role === "assistant");
	const parts = last && Array.isArray(last.content) ? last.content : [];
	const text = parts
		.filter((c: any) => c && c.type === "text" && typeof c.text === "string")
		.map((c: any) => c.text)
		.join("");
	return {
		text,
		stopReason: typeof last?.stopReason === "string" ? last.stopReason : "",
		error: typeof last?.errorMessage === "string" ? last.errorMessage : "",
	};
}

// -- spend (#27): where pi records this session's messages, each assistant message with its
// model and usage; captain reads it from where it left off (state/crew/spend.py) at agent_end.
function spendSource(ctx: any): string {
	try {
		const file = ctx?.sessionManager?.getSessionFile?.();
		return typeof file === "string" ? file : "";
	} catch {
		return "";
	}
}

// -- the budget's gate (docs/budgets.md) -------------------------------------------------
// Its own function, called first by the tool_call handler: captain's hook measures the
// spend from pi's session file and answers {"block": true, "reason": TEXT} once the
// assignment's measured spend reaches its budget, and nothing otherwise. Fails open
// (undefined: the call runs).
async function budgetGate(
	event: any,
	ctx: any,
): Promise<{ block: true; reason: string } | undefined> {
	try {
		const tool = typeof event?.toolName === "string" ? event.toolName : "";
		const data = answer(
			await hook("budget", { tool_name: clip(tool), session_file: clip(spendSource(ctx)) }),
		);
		if (data?.block !== true) return undefined;
		const reason = typeof data.reason === "string" && data.reason ? data.reason : "budget reached";
		return { block: true, reason };
	} catch {
		return undefined;
	}
}

export default function (pi: any) {
	pi.on("before_agent_start", async (event: any) => {
		try {
			const prompt = clip(typeof event?.prompt === "string" ? event.prompt : "");
			const data = answer(await hook("before_agent_start", { prompt }));
			const text = data?.message;
			if (typeof text !== "string" || text === "") return undefined;
			return { message: { customType: "captain-mail", content: text, display: true } };
		} catch {
			return undefined;
		}
	});

	// tools the captain allowed "for this session": this extension runtime is pi's
	// session's (pi makes a new one for a new, resumed or forked session)
	const allowed = new Set<string>();
	pi.on("session_start", () => {
		allowed.clear();
	});

	// One handler, so the order is ours: a call past the budget is refused before it is
	// held for an approval the captain would then be asked for in vain.
	pi.on("tool_call", async (event: any, ctx: any) => {
		const refused = await budgetGate(event, ctx);
		if (refused) return refused;
		const tool = typeof event?.toolName === "string" ? event.toolName.toLowerCase() : "";
		if (!GATED.includes(tool) || allowed.has(tool)) return undefined;
		let data: Record<string, unknown> | undefined;
		try {
			data = answer(
				await hook(
					"tool_call",
					{ tool_name: event.toolName, tool_input: event.input },
					GATE_TIMEOUT_MS,
					ctx?.signal,
				),
			);
		} catch {
			data = undefined;
		}
		const decision = data?.decision;
		if (decision === "allow") return undefined;
		if (decision === "allow_session") {
			allowed.add(tool);
			return undefined;
		}
		if (decision === "deny") {
			const reason = typeof data?.reason === "string" && data.reason ? data.reason : "";
			return { block: true, reason: reason || "The captain denied this." };
		}
		if (ctx?.signal?.aborted) {
			return { block: true, reason: "The turn was interrupted before the captain answered." };
		}
		// No decision: the person in the pane answers, as if captain were not there.
		try {
			if (!ctx?.hasUI) return { block: true, reason: NO_ANSWER };
			const ok = await ctx.ui.confirm(
				`Allow ${shown(String(event.toolName))}? (the captain did not answer)`,
				shown(what(event.input)),
				{ signal: ctx.signal },
			);
			return ok ? undefined : { block: true, reason: "Blocked by the person at the pane." };
		} catch {
			return { block: true, reason: NO_ANSWER };
		}
	});

	pi.on("agent_end", async (event: any, ctx: any) => {
		try {
			const last = lastAssistant(event?.messages);
			await hook("agent_end", {
				last_assistant_text: clip(last.text),
				stop_reason: clip(last.stopReason),
				error_message: clip(last.error),
				session_file: clip(spendSource(ctx)),
			});
		} catch {
			// fail open
		}
	});
}
