// Prints the body of POST /api/v1/chatflows for the Reelforge knowledge chatflow: one Custom JS
// Function node (kb-answer.js) as the ending node, and an apiConfig that lets Reelforge override
// the variables it sends (overrideConfig.vars) and the sessionId.
//   node kb-chatflow.js kb-answer.js <name> [<Flowise API key id the flow requires>]
const fs = require('fs');
const [code, name, keyid] = [fs.readFileSync(process.argv[2], 'utf8'), process.argv[3], process.argv[4]];
const node = { id: 'customFunction_0', type: 'customNode', position: { x: 400, y: 200 }, width: 300, height: 600,
  data: { id: 'customFunction_0', label: 'Custom JS Function', version: 3, name: 'customFunction', type: 'CustomFunction',
    baseClasses: ['CustomFunction', 'Utilities'], category: 'Utilities', description: 'Execute custom javascript function',
    inputParams: [], inputAnchors: [],
    inputs: { functionInputVariables: '', functionName: 'reelforge_kb', tools: '', javascriptFunction: code },
    outputAnchors: [{ name: 'output', label: 'Output', type: 'options', options: [
      { id: 'customFunction_0-output-output-string|number|boolean|json|array', name: 'output', label: 'Output', type: 'string | number | boolean | json | array' },
      { id: 'customFunction_0-output-EndingNode-CustomFunction', name: 'EndingNode', label: 'Ending Node', type: 'CustomFunction' }], default: 'output' }],
    outputs: { output: 'EndingNode' }, selected: false } };
const vars = ['user_id', 'project_id', 'reelforge_url', 'reelforge_token'];
const body = { name, type: 'CHATFLOW', deployed: false, isPublic: false,
  flowData: JSON.stringify({ nodes: [node], edges: [], viewport: { x: 0, y: 0, zoom: 1 } }),
  apiConfig: JSON.stringify({ overrideConfig: { status: true, nodes: {}, variables: vars.map((v) => ({ id: v, name: v, type: 'static', enabled: true })) } }) };
if (keyid) body.apikeyid = keyid;
process.stdout.write(JSON.stringify(body));
