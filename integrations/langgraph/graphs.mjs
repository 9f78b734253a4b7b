// Reelforge's own LangGraph.js graphs, served by a stock LangGraph server (`langgraphjs dev`, see
// langgraph.json): live_script (a live-stream rundown, with an optional human review) and
// short_drama (a short drama episode). The graph engine (RUNNER_PROTOCOL=langgraph) starts them
// with the run's inputs as the input state and reads their final state as the run's outputs; the
// host renders short_drama's video after the graph (the workflow's generator step).
//
// No language model is called: the text is written from templates over the inputs (and, for
// live_script, the run owner's notes read with the run's tool credential), and every output says
// so (source, note). A graph of yours would call its model here.
//
// STEP_SECONDS (environment) makes each node take that long, so that a graph can run longer than
// the graph engine's job timeout (scripts/e2e-langgraph.sh sets it).
import { Annotation, StateGraph, START, END, interrupt } from "@langchain/langgraph";

const stepSeconds = Number(process.env.STEP_SECONDS || "0");
const pause = () => new Promise((r) => setTimeout(r, stepSeconds * 1000));
const last = (_, b) => b;

const State = Annotation.Root({
  topic: Annotation({ reducer: last, default: () => "" }),
  summary: Annotation({ reducer: last, default: () => "" }),
  prompt: Annotation({ reducer: last, default: () => "" }),
  platform: Annotation({ reducer: last, default: () => "" }),
  style: Annotation({ reducer: last, default: () => "" }),
  characters: Annotation({ reducer: last, default: () => "" }),
  review: Annotation({ reducer: last, default: () => false }),
  notes: Annotation({ reducer: last, default: () => [] }),
  notes_from: Annotation({ reducer: last, default: () => "" }), // "knowledge base" or "template"
  feedback: Annotation({ reducer: last, default: () => "" }),
  title: Annotation({ reducer: last, default: () => "" }),
  script: Annotation({ reducer: last, default: () => "" }),
  source: Annotation({ reducer: last, default: () => "template" }),
  note: Annotation({ reducer: last, default: () => "" }),
});

const subject = (s) => (s.topic || s.summary || s.prompt || "today's topic").trim();

// research takes its segments from the run owner's notes on the subject when Reelforge hands the
// graph its tool credential (config.configurable: reelforge_url and __reelforge_token, a key
// LangGraph keeps out of checkpoints and traces), from a template otherwise.
async function research(s, config) {
  await pause();
  const about = subject(s);
  const known = await ownerNotes(about, config);
  if (known.length) return { notes: known, notes_from: "knowledge base" };
  return { notes_from: "template", notes: [`What viewers ask most about ${about}`, `One mistake people make with ${about}`, `A quick demo of ${about}`] };
}

// ownerNotes: the passages of the run owner's knowledge base about query (at most 3), read with
// the run's tool credential; none without one. The credential reads that owner's knowledge only,
// and only while the run lasts.
async function ownerNotes(query, config) {
  const { reelforge_url: url, __reelforge_token: token } = config?.configurable ?? {};
  if (!url || !token) return [];
  const res = await fetch(`${url}/api/knowledge/context`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, top_k: 3 }),
  });
  if (!res.ok) throw new Error(`Reelforge's /api/knowledge/context answered ${res.status}: ${await res.text()}`);
  const { data } = await res.json();
  return (data?.hits ?? []).map((h) => h.chunk_text.replace(/\s+/g, " ").trim()).filter(Boolean);
}

async function writeRundown(s) {
  await pause();
  const about = subject(s);
  const lines = [
    `Opening (0:00): hello everyone, today we talk about ${about}${s.platform ? ` here on ${s.platform}` : ""}.`,
    ...s.notes.map((n, i) => `Segment ${i + 1}: ${n}.`),
    `Call to action: follow for the next live, and ask your questions about ${about} in the chat.`,
  ];
  return { title: `Live: ${about}`, script: lines.join("\n"),
    note: `written from a template over ${s.notes_from === "knowledge base" ? "the owner's notes" : "the topic"} (this graph calls no language model)` };
}

// review pauses the run for a person when the input asks for it (review: true); the value given
// to resume it ({feedback: "..."}) is worked into the rundown.
async function review(s) {
  if (!s.review) return {};
  const answer = interrupt({ prompt: `Review the rundown for "${subject(s)}": send {"feedback": "..."} to resume.`, script: s.script });
  const feedback = typeof answer === "string" ? answer : (answer?.feedback ?? "");
  if (!feedback) return {};
  return { feedback, script: `${s.script}\nReviewer's note: ${feedback}` };
}

async function writeEpisode(s) {
  await pause();
  const about = subject(s);
  const cast = (s.characters || "Lin, Chen").split(/[,，、]/).map((c) => c.trim()).filter(Boolean);
  const [a, b = "Chen"] = cast;
  const lines = [
    `Scene 1. ${a} finds out about ${about}.`,
    `${a}: I never thought ${about} could change everything.`,
    `${b}: Then tonight we find out together.`,
    `Scene 2. The truth about ${about} comes out.`,
    `${a}: So this is what you were hiding.`,
    `${b}: Only to protect you. To be continued.`,
  ];
  return { title: `${about}: episode 1`, script: lines.join("\n"),
    note: "written from a template (this graph calls no language model)" };
}

async function polish(s) {
  await pause();
  const style = (s.style || "").trim();
  return { script: style ? `${s.script}\n(Tone: ${style}.)` : s.script };
}

export const live = new StateGraph(State)
  .addNode("research", research)
  .addNode("write_rundown", writeRundown)
  .addNode("human_review", review)
  .addNode("polish", polish)
  .addEdge(START, "research")
  .addEdge("research", "write_rundown")
  .addEdge("write_rundown", "human_review")
  .addEdge("human_review", "polish")
  .addEdge("polish", END)
  .compile();

export const shortDrama = new StateGraph(State)
  .addNode("write_episode", writeEpisode)
  .addNode("polish", polish)
  .addEdge(START, "write_episode")
  .addEdge("write_episode", "polish")
  .addEdge("polish", END)
  .compile();
