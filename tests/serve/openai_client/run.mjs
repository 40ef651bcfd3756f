// tests/serve/openai_client/run.mjs — the official openai npm client against a running dsv41-rt serve: models, completions, streaming, chat, an error.
// Usage: node run.mjs BASE_URL MODEL [chat]   (exit 0 when every check holds; each failure is printed)
import OpenAI from 'openai';

const [baseURL, model, chat] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: 'not-checked', maxRetries: 0, timeout: 60000 });
let failures = 0;
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
}

const models = await client.models.list();
check(models.data.some((m) => m.id === model), `models.list has ${model}: ${JSON.stringify(models.data)}`);

const prompt = 'The capital of France is';
const whole = await client.completions.create({ model, prompt, max_tokens: 6, temperature: 0.7, seed: 11 });
check(whole.choices[0].text.length > 0 && whole.usage.completion_tokens === 6,
  `completions.create: ${JSON.stringify(whole.choices[0].text)}, usage ${JSON.stringify(whole.usage)}`);

let streamed = '';
const stream = await client.completions.create({ model, prompt, max_tokens: 6, temperature: 0.7, seed: 11, stream: true });
for await (const chunk of stream) streamed += chunk.choices[0]?.text ?? '';
check(streamed === whole.choices[0].text, `streamed completion equals the whole one: ${JSON.stringify(streamed)}`);

if (chat === 'chat') {
  const messages = [{ role: 'user', content: 'What is 2 + 2?' }];
  // Thinking is on by default: the reply is reasoning_content (then content after </think>).
  const reply = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0 });
  const message = reply.choices[0].message;
  const whole = (message.reasoning_content ?? '') + '|' + (message.content ?? '');
  check(message.role === 'assistant' && reply.usage.completion_tokens === 8 && whole.length > 1,
    `chat.completions.create: ${JSON.stringify(reply.choices[0])}`);
  let reasoning = '';
  let content = '';
  const chatStream = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, stream: true });
  for await (const chunk of chatStream) {
    reasoning += chunk.choices[0]?.delta?.reasoning_content ?? '';
    content += chunk.choices[0]?.delta?.content ?? '';
  }
  check(reasoning + '|' + content === whole, `streamed chat equals the whole reply: ${JSON.stringify(reasoning + '|' + content)}`);
}

try {
  await client.completions.create({ model: 'no-such-model', prompt, max_tokens: 2 });
  check(false, 'an unknown model is refused');
} catch (e) {
  check(e instanceof OpenAI.NotFoundError && e.status === 404, `an unknown model is refused: ${e.status} ${e.message}`);
}
try {
  await client.completions.create({ model, prompt, max_tokens: 2, temperature: 7 });
  check(false, 'temperature 7 is refused');
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.param === 'temperature', `temperature 7 is refused: ${e.status} ${e.message}`);
}
process.exit(failures ? 1 : 0);
