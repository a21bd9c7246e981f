-- Gatehouse for Neovim (0.7.2 and later): a chat buffer that streams the answer as it arrives,
-- tool calls with their command, live output and final status, and approvals through
-- vim.ui.select with Deny first. See docs/editors.md.
local display = require("gatehouse.display")

local M = {}

local PLUGIN_KEYS = { cmd = true, root_dir = true, log_file = true, approval_wait_ms = true }

local config = {
  cmd = { "gatehouse", "serve" },
  root_dir = nil, -- default: the current directory when the server starts
  log_file = nil, -- default: stdpath("cache") .. "/gatehouse.log" (not Neovim's lsp.log)
  approval_wait_ms = 24 * 3600 * 1000,
  init_options = {},
}

local state = {
  client_id = nil,
  session_id = nil,
  request_id = nil,
  running = false,
  buf = nil,
  mode = nil, -- what the buffer's last line is: "content", "reasoning", "output" or nil
  model = nil,
  isolation = nil,
  network = nil,
  status = nil,
  withdrawn = {}, -- approvalIds the server withdrew ($/cancelRequest)
  waiting = {}, -- approvalIds whose prompt is open
}

M._state = state -- for tests

--- setup({...}): cmd, root_dir, log_file and approval_wait_ms configure the plug-in; every other
--- key is passed to the server as initializationOptions (e.g. confirmTimeoutSeconds,
--- sandbox = { minLevel = "strong" }, model = "ollama:qwen2.5:0.5b").
function M.setup(opts)
  opts = opts or {}
  local init_options = {}
  for key, value in pairs(opts) do
    if PLUGIN_KEYS[key] then
      config[key] = value
    else
      init_options[key] = value
    end
  end
  config.init_options = init_options
end

-- --- the chat buffer -------------------------------------------------------------------------

local OUTPUT_PREFIX = "  ┊ "

local function chat_buffer()
  if state.buf and vim.api.nvim_buf_is_valid(state.buf) then
    return state.buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, "gatehouse://chat")
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "gatehouse"
  state.buf = buf
  return buf
end

local function show_buffer()
  local buf = chat_buffer()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return win
    end
  end
  vim.cmd("botright vsplit")
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  return win
end

local function follow()
  local buf = chat_buffer()
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf then
      vim.api.nvim_win_set_cursor(win, { last, 0 })
    end
  end
end

-- Appends text to the last line (a delta streams into place); each new line starts with prefix.
local function append(text, prefix)
  prefix = prefix or ""
  local buf = chat_buffer()
  local count = vim.api.nvim_buf_line_count(buf)
  local last = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ""
  local pieces = vim.split(last .. text, "\n", true)
  for k = 2, #pieces do
    pieces[k] = prefix .. pieces[k]
  end
  vim.api.nvim_buf_set_lines(buf, count - 1, count, false, pieces)
  follow()
end

-- Starts a new line holding text (a block: tool calls, statuses, notices).
local function line(text, mode)
  local buf = chat_buffer()
  local count = vim.api.nvim_buf_line_count(buf)
  local last = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ""
  local lines = vim.split(text, "\n", true)
  if count == 1 and last == "" then
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, lines)
  elseif state.mode == "output" and last == OUTPUT_PREFIX then
    vim.api.nvim_buf_set_lines(buf, count - 1, count, false, lines) -- no empty output line
  else
    vim.api.nvim_buf_set_lines(buf, count, count, false, lines)
  end
  state.mode = mode
  follow()
end

local function indented(text, prefix)
  local lines = vim.split(display.visible(text), "\n", true)
  for k, value in ipairs(lines) do
    lines[k] = prefix .. value
  end
  return table.concat(lines, "\n")
end

-- What a person reviews: the code or command itself, else the arguments as JSON.
local function shown_code(arguments)
  local keys = vim.tbl_keys(arguments or {})
  for _, key in ipairs({ "code", "command" }) do
    if #keys == 1 and type(arguments[key]) == "string" then
      return arguments[key]
    end
  end
  return vim.json.encode(arguments or {})
end

local ENDED = {
  completed = "completed",
  failed = "FAILED",
  denied = "DENIED: not run",
  timed_out = "TIMED OUT: no answer to the approval in time, not run",
  cancelled = "CANCELLED",
}

local function on_stream(p)
  if type(p) ~= "table" then
    return
  end
  state.session_id = p.sessionId or state.session_id
  local kind = p.type
  if kind == "content" then
    if state.mode ~= "content" then
      line("", "content")
    end
    append(display.visible(p.text or ""))
  elseif kind == "reasoning" then
    if state.mode ~= "reasoning" then
      line("(thinking) ", "reasoning")
    end
    append(display.visible(p.text or ""), "(thinking) ")
  elseif kind == "tool_start" then
    line("▶ " .. display.visible(p.name or "?") .. ":\n" .. indented(shown_code(p.arguments), "  │ "), "tool")
    if p.awaitingConfirmation then
      line("  ⏳ waiting for your approval (Deny is the default)", "tool")
    end
  elseif kind == "tool_output" then
    if state.mode ~= "output" then
      line(OUTPUT_PREFIX, "output")
    end
    append(display.visible(p.text or ""), OUTPUT_PREFIX)
  elseif kind == "tool_end" then
    local text = ENDED[p.status] or tostring(p.status)
    if p.exitCode ~= nil and p.exitCode ~= vim.NIL then
      text = text .. " (exit " .. tostring(p.exitCode) .. ")"
    end
    if type(p.sandbox) == "table" then
      text = text .. " [isolation: " .. tostring(p.sandbox.level) .. ", network: "
        .. (p.sandbox.network and "on" or "off") .. "]"
    end
    if p.status == "failed" and type(p.result) == "string" then
      text = text .. ": " .. display.visible(vim.split(p.result, "\n", true)[1])
    end
    line("■ " .. display.visible(p.name or "?") .. " " .. text, "tool")
  elseif kind == "status" then
    state.status = p.text
    line("· " .. display.visible(p.text or ""), "status")
  end
  vim.cmd("redrawstatus!")
end

-- --- approvals ---------------------------------------------------------------------------------

local FALLBACK_CHOICES = {
  { label = "Deny", decision = "deny", kind = "deny" },
  { label = "Allow once", decision = "allow", kind = "allow_once" },
}

local DECISION = { deny = "deny", allow_once = "allow", allow_always = "allow", allow_session = "allow_session" }

-- The server's choices (labels with their scope, e.g. "Allow `npm test *` in this session"),
-- display-safe, Deny first whatever order they came in.
local function choices_of(p)
  if type(p.choices) ~= "table" or #p.choices == 0 then
    return FALLBACK_CHOICES
  end
  local denies, others = {}, {}
  for _, c in ipairs(p.choices) do
    local item = { label = display.visible(tostring(c.label)), decision = DECISION[c.kind] or "deny", kind = c.kind, id = c.id }
    table.insert(item.kind == "deny" and denies or others, item)
  end
  if #denies == 0 then
    denies = { FALLBACK_CHOICES[1] }
  end
  return vim.list_extend(denies, others)
end

local function approval_prompt(p)
  local sandbox = type(p.sandbox) == "table" and p.sandbox or {}
  local code = shown_code(p.arguments)
  local parts = {
    "Gatehouse wants to run " .. display.visible(p.name or "?") .. " (isolation: "
      .. tostring(sandbox.level or "unknown") .. ", network: " .. (sandbox.network and "on" or "off") .. ")",
  }
  local warning = display.hidden_warning(code)
  if warning then
    parts[#parts + 1] = warning
  end
  parts[#parts + 1] = display.visible(code)
  parts[#parts + 1] = "Deny is the default (Esc, q or an empty answer deny)."
  return table.concat(parts, "\n")
end

local function on_tool_confirm(_, p)
  local id = p.approvalId
  state.waiting[id] = true
  local choices = choices_of(p)
  local items = {}
  for k, choice in ipairs(choices) do
    items[k] = choice.label
  end
  local chosen
  vim.ui.select(items, { prompt = approval_prompt(p), kind = "gatehouse.approval" }, function(_, idx)
    chosen = idx and choices[idx] or choices[1] -- dismissed: Deny
  end)
  -- An asynchronous vim.ui.select answers later: wait for it, or for the server to withdraw.
  vim.wait(config.approval_wait_ms, function()
    return chosen ~= nil or state.withdrawn[id] ~= nil
  end, 20)
  vim.wait(20, function()
    return state.withdrawn[id] ~= nil
  end, 5) -- a withdrawal that arrived while a blocking prompt was open
  state.waiting[id] = nil
  if state.withdrawn[id] then
    line("  ⌛ the approval prompt was withdrawn (timed out or cancelled): not run", "tool")
    return { decision = "deny", approvalId = id }
  end
  chosen = chosen or choices[1]
  return { decision = chosen.decision, choice = chosen.id, approvalId = id }
end

local function on_cancel_request(_, p)
  local msg_id = type(p) == "table" and tostring(p.id) or ""
  for id in pairs(state.waiting) do
    if msg_id:find(id, 1, true) then
      state.withdrawn[id] = true
    end
  end
end

-- --- the client --------------------------------------------------------------------------------

local function client()
  return state.client_id and vim.lsp.get_client_by_id(state.client_id) or nil
end

-- Neovim 0.11 made the client's functions methods (client:request); 0.7 to 0.10 call them as
-- fields (client.request), and 0.7 rejects the method form.
local NEW_API = vim.fn.has("nvim-0.11") == 1

local function request(c, method, params, handler)
  if NEW_API then
    return c:request(method, params, handler)
  end
  return c.request(method, params, handler)
end

local function is_stopped(c)
  if NEW_API then
    return c:is_stopped()
  end
  return c.is_stopped()
end

local function cancel_request(c, id)
  if NEW_API then
    return c:cancel_request(id)
  end
  return c.cancel_request(id)
end

local function refresh_status(c)
  request(c, "agent/status", vim.empty_dict(), function(err, result)
    if not err and type(result) == "table" then
      state.model = result.model ~= vim.NIL and result.model or nil
      if type(result.sandbox) == "table" then
        state.isolation, state.network = result.sandbox.level, result.sandbox.network
      end
      vim.cmd("redrawstatus!")
    end
  end)
end

local function start(on_ready)
  local c = client()
  if c and not is_stopped(c) then
    return on_ready(c)
  end
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  capabilities.experimental = { toolConfirm = true }
  local cmd = vim.deepcopy(config.cmd)
  local log_file = config.log_file or (vim.fn.stdpath("cache") .. "/gatehouse.log")
  vim.list_extend(cmd, { "--log-file", log_file })
  local cfg = {
    name = "gatehouse",
    cmd = cmd,
    root_dir = config.root_dir or vim.fn.getcwd(),
    init_options = next(config.init_options) and config.init_options or vim.empty_dict(),
    capabilities = capabilities,
    handlers = {
      ["agent/stream"] = function(err, params)
        on_stream(params)
      end,
      ["toolConfirm"] = on_tool_confirm,
      ["$/cancelRequest"] = on_cancel_request,
    },
    on_init = function(new_client, result)
      local caps = result and result.capabilities or {}
      local gatehouse = type(caps.experimental) == "table" and caps.experimental.gatehouse or nil
      if type(gatehouse) == "table" and type(gatehouse.sandbox) == "table" then
        state.isolation, state.network = gatehouse.sandbox.level, gatehouse.sandbox.network
      end
      refresh_status(new_client)
      on_ready(new_client)
    end,
    on_exit = function(code)
      state.client_id, state.running = nil, false
      -- Neovim 0.10+ calls on_exit in a fast event context, where buffers cannot be changed.
      vim.schedule(function()
        if code ~= 0 then
          line("The Gatehouse server stopped (exit " .. tostring(code) .. "); see " .. log_file, "status")
        end
        vim.cmd("redrawstatus!")
      end)
    end,
  }
  local ok, id
  if NEW_API then
    ok, id = pcall(vim.lsp.start, cfg, { attach = false })
  else
    ok, id = pcall(vim.lsp.start_client, cfg)
  end
  if not ok or not id then
    state.running = false
    line("The Gatehouse server did not start (" .. table.concat(cmd, " ") .. "): "
      .. tostring(id or "no client") .. ". Set cmd in require('gatehouse').setup({...}).", "status")
    return
  end
  state.client_id = id
end

--- :GatehouseChat {prompt}: sends prompt (asks for one when empty) in the current session.
function M.chat(prompt)
  show_buffer()
  if prompt == nil or prompt == "" then
    vim.ui.input({ prompt = "Gatehouse> " }, function(input)
      if input and input ~= "" then
        M.chat(input)
      end
    end)
    return
  end
  if state.running then
    line("A turn is still running: :GatehouseStop first.", "status")
    return
  end
  line("> " .. prompt, "prompt")
  state.running = true
  start(function(c)
    local params = { prompt = prompt, sessionId = state.session_id }
    local _, id = request(c, "agent/chat", params, function(err, result)
      state.running, state.request_id = false, nil
      if err then
        line("Error: " .. display.visible(tostring(err.message or err)), "status")
      elseif type(result) == "table" then
        state.session_id = result.sessionId
        line("── " .. tostring(result.stopReason) .. " ──", "status")
      end
      refresh_status(c)
    end)
    state.request_id = id
    vim.cmd("redrawstatus!")
  end)
end

--- :GatehouseStop: cancels the running turn (a pending approval is withdrawn, a running command
--- is killed).
function M.stop()
  local c = client()
  if not c or not state.running then
    return
  end
  if state.session_id then
    request(c, "agent/cancel", { sessionId = state.session_id }, function() end)
  elseif state.request_id then
    cancel_request(c, state.request_id)
  end
end

--- :GatehouseNew: the next prompt starts a new session.
function M.new()
  state.session_id = nil
  line("── new session ──", "status")
end

--- For 'statusline': "Gatehouse: <model> · <isolation>" (and "· running" during a turn).
function M.statusline()
  if not state.client_id then
    return ""
  end
  local parts = { "Gatehouse: " .. (state.model or "model not loaded") }
  if state.isolation then
    parts[#parts + 1] = "isolation " .. state.isolation .. (state.network and " (network on)" or "")
  end
  if state.running then
    parts[#parts + 1] = "running"
  end
  return table.concat(parts, " · ")
end

return M
