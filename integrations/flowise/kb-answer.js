// Reelforge knowledge answer: the body of a Flowise "Custom JS Function" node (ending node).
// No language model: it answers with the passages Reelforge's knowledge base returns for the
// question, read as the asker through the run's tool credential ($vars.reelforge_token), and
// says how many earlier turns of this conversation (Flowise's chat messages of $flow.chatId)
// it sees. $vars.flowise_url and $vars.flowise_key (Flowise variables) let it read those.
const fetch = require('node-fetch');
const ask = await fetch($vars.reelforge_url + '/api/knowledge/context', {
  method: 'POST',
  headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + $vars.reelforge_token },
  body: JSON.stringify({ query: $input, top_k: 3 }),
});
const ctx = await ask.json();
if (!ask.ok) throw new Error('Reelforge answered ' + ask.status + ': ' + JSON.stringify(ctx));
const hist = await fetch($vars.flowise_url + '/api/v1/chatmessage/' + $flow.chatflowId + '?chatId=' + encodeURIComponent($flow.chatId), {
  headers: { Authorization: 'Bearer ' + $vars.flowise_key },
});
const msgs = hist.ok ? await hist.json() : [];
const earlier = (Array.isArray(msgs) ? msgs : []).filter((m) => m.role === 'userMessage').map((m) => m.content);
const context = ((ctx.data && ctx.data.context) || '').trim();
const lines = ['Turn ' + (earlier.length + 1) + ' of conversation ' + $flow.chatId + '.'];
if (earlier.length) lines.push('Earlier you asked: ' + earlier.join(' | '));
lines.push(context ? 'From your notes: ' + context : 'Your notes say nothing about this.');
return lines.join('\n');
