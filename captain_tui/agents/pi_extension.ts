// captain's pi extension: the crew's pi reports to captain through `captain hook pi EVENT`.
//
// Written into the captain home per crew by captain_tui/agents/pi.py, which replaces the
// marker below with the argv that runs captain as a JSON literal (ASCII only, so no text
// can end the literal early). Loaded with `pi -e FILE`; it imports nothing from pi.
//
// - before_agent_start (every prompt, the wake line included): the hook prints at most one
//   JSON line {"message": TEXT}; TEXT (the unread mail) joins the prompt as a custom
//   message, which pi sends to the model as user content. captain counts the mail as read
//   once that line is written.
// - agent_end: the last assistant text goes to captain as an `idle` signal, with the path of
//   pi's session file, from which captain measures the turn's spend.
// - tool_call: the budget's gate (budgetGate below, docs/budgets.md): at the assignment's
//   budget the hook prints {"block": true, "reason": TEXT} and the call is not run.
//
// Fails open everywhere: whatever captain does (missing, slow, crashing, printing garbage),
// pi carries on. A hook gets HOOK_TIMEOUT_MS, then is killed.
import { spawn } from "node:child_process";

const CAPTAIN: string[] = __CAPTAIN_ARGV__;
const HOOK_TIMEOUT_MS = 10000;
const MAX_OUTPUT = 4 * 1024 * 1024;
// Text the extension passes on is cut to this many UTF-16 units: captain reads a bounded
// stdin (hooks.MAX_INPUT) and fails open beyond it, which would lose the turn's signal or
// the mail (a pasted prompt of megabytes). captain keeps a short summary anyway.
const MAX_TEXT = 64 * 1024;

function clip(text: string): string {
	return text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) : text;
}

function hook(event: string, input: Record<string, unknown>): Promise<string> {
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
				timeout: HOOK_TIMEOUT_MS,
				killSignal: "SIGKILL",
			});
			child.on("error", () => finish(""));
			child.stdout.setEncoding("utf8");
			child.stdout.on("data", (chunk: string) => {
				if (out.length < MAX_OUTPUT) out += chunk;
			});
			child.on("close", () => finish(out));
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
			await hook("tool_call", { tool_name: clip(tool), session_file: clip(spendSource(ctx)) }),
		);
		if (data?.block !== true) return undefined;
		const reason = typeof data.reason === "string" && data.reason ? data.reason : "budget reached";
		return { block: true, reason };
	} catch {
		return undefined;
	}
}

export default function (pi: any) {
	pi.on("tool_call", async (event: any, ctx: any) => {
		const refused = await budgetGate(event, ctx);
		if (refused) return refused;
		return undefined;
	});

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
