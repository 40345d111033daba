// Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
// Drives a Space playground in headless Chromium (Debian's, through playwright-core) the way a visitor
// does, and prints what the visitor saw as one JSON line; tests/test_envs_browser.py asserts on it.
//
//   node tests/browser/playground.mjs '{"scenario": "whitebox-solve", "url": "http://127.0.0.1:8000", ...}'
//
// Scenarios:
//   whitebox-solve   start the first task; run a bad command; submit an empty answer; run the
//                    reference command; submit its output; read the score cards (PNG saved)
//   whitebox-expire  start a task, wait past the session's life, run a command
//   harness-rollout  pick the scripted endpoint, run the rollout, wait for its trace and cards (PNG saved)
import { chromium } from "playwright-core";

const config = JSON.parse(process.argv[2]);
const TIMEOUT_MS = config.timeout_ms ?? 120_000;

const text = (page, id) => page.locator(`#${id}`).innerText();
const box = (page, id) => page.locator(`#${id}`).locator("textarea, input").first();

async function waitForText(page, id, needle) {
  await page.waitForFunction(
    ([id, needle]) => (document.querySelector(`#${id}`)?.innerText ?? "").includes(needle),
    [id, needle],
    { timeout: TIMEOUT_MS },
  );
  return text(page, id);
}

async function waitForValue(page, id, needle) {
  await page.waitForFunction(
    ([id, needle]) => {
      const field = document.querySelector(`#${id} textarea, #${id} input`);
      return (field?.value ?? "").includes(needle);
    },
    [id, needle],
    { timeout: TIMEOUT_MS },
  );
  return box(page, id).inputValue();
}

// Runs a command and waits for its entry in the history (the output box still shows the last one until then).
async function run(page, command, done) {
  const entries = await page.locator("#history li").count();
  await box(page, "command").fill(command);
  await page.click("#run");
  await page.waitForFunction((n) => document.querySelectorAll("#history li").length > n, entries, { timeout: TIMEOUT_MS });
  return waitForValue(page, "output", done);
}

async function whiteboxSolve(page) {
  const seen = {};
  await page.click("#start");
  seen.started = await waitForText(page, "status", "Sandbox ready");
  seen.question = await text(page, "question");
  seen.bad_command = await run(page, "no-such-tool --now", "[exit code");
  await box(page, "answer").fill("");
  await page.click("#submit");
  seen.empty_answer = await waitForText(page, "status", "empty");
  seen.escaped = await run(page, "echo '<b>bold</b>'", "[exit code");
  seen.history_html = await page.locator("#history").innerHTML();
  const output = await run(page, config.command, "[exit code 0]");
  const answer = output.split("\n[exit code")[0].trim();
  await box(page, "answer").fill(answer);
  await page.click("#submit");
  seen.verdict = await waitForText(page, "status", "reward");
  seen.reward = await page.locator("#card-reward .mh-value").innerText();
  seen.correctness = await page.locator("#card-correctness .mh-value").innerText();
  seen.tool_calls = await page.locator("#card-tool-calls .mh-value").innerText();
  return seen;
}

async function whiteboxExpire(page) {
  await page.click("#start");
  const started = await waitForText(page, "status", "Sandbox ready");
  await page.waitForTimeout(config.wait_ms);
  await box(page, "command").fill("ls");
  await page.click("#run");
  const expired = await waitForText(page, "status", "expired");
  return { started, expired };
}

async function harnessRollout(page) {
  await page.locator("#endpoint label", { hasText: "scripted" }).click();
  await page.click("#run");
  const verdict = await waitForText(page, "status", "correctness");
  const calls = await text(page, "calls");
  const reward = await page.locator("#card-reward").innerText();
  const capture = await page.locator("#capture").innerText();
  return { verdict, calls, reward, capture };
}

const scenarios = { "whitebox-solve": whiteboxSolve, "whitebox-expire": whiteboxExpire, "harness-rollout": harnessRollout };

const browser = await chromium.launch({
  executablePath: config.chromium ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-background-networking"],
});
try {
  const page = await browser.newPage({ viewport: { width: config.width ?? 1280, height: 900 } });
  await page.goto(`${config.url}/web/`, { timeout: TIMEOUT_MS });
  await page.waitForSelector("#status", { timeout: TIMEOUT_MS });
  let seen;
  try {
    seen = await scenarios[config.scenario](page);
  } catch (error) {
    // What the visitor saw when it failed: the status line, and the page as a PNG beside the screenshot.
    const status = await page.locator("#status").innerText().catch(() => "(no status)");
    if (config.screenshot) await page.screenshot({ path: config.screenshot.replace(/\.png$/, "-failed.png"), fullPage: true });
    throw new Error(`${config.scenario} failed with the status "${status}": ${error.message}`);
  }
  seen.page_width = await page.evaluate(() => document.documentElement.scrollWidth);
  if (config.screenshot) {
    await page.screenshot({ path: config.screenshot, fullPage: true });
  }
  console.log(JSON.stringify(seen));
} finally {
  await browser.close();
}
