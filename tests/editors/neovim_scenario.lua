-- One scenario of tests/editors/test_neovim.py, run by `nvim --headless --clean -u THIS` (or, as
-- a user who followed docs/editors.md, `nvim --headless -c 'luafile THIS'`).
-- The plug-in is used as a person would (its commands), with vim.ui.select replaced by a
-- recording function; the buffer is sampled while the turn runs. Writes a JSON report.
local env = vim.env
local plugin_dir, report_path = env.GATEHOUSE_PLUGIN_DIR, env.GATEHOUSE_REPORT
local scenario, answer = env.GATEHOUSE_SCENARIO, env.GATEHOUSE_ANSWER
if plugin_dir then -- else: installed and set up as docs/editors.md says (init.lua, a package)
  vim.opt.runtimepath:prepend(plugin_dir)
  vim.cmd("runtime plugin/gatehouse.lua")
end
local report = { scenario = scenario, asked = {}, snapshots = {}, errors = {} }
local found, gatehouse = pcall(require, "gatehouse")
if not found or vim.fn.exists(":GatehouseChat") ~= 2 then -- not installed: say so at once
  table.insert(report.errors, "the plug-in is not loaded: " .. tostring(found and "" or gatehouse))
  local file = io.open(report_path, "w")
  file:write(vim.json.encode(report))
  file:close()
  vim.cmd("qa!")
end

local function finish()
  local buf = gatehouse._state.buf
  report.buffer = buf and table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") or ""
  report.statusline = gatehouse.statusline()
  -- the statusline expression docs/editors.md gives
  local expr = "%{v:lua.require'gatehouse'.statusline()}"
  report.statusline_eval = vim.api.nvim_eval_statusline(expr, { fillchar = " ", maxwidth = 200 }).str
  local file = io.open(report_path, "w")
  file:write(vim.json.encode(report))
  file:close()
  vim.cmd("qa!")
end

local ok, err = pcall(function()
  if env.GATEHOUSE_SETUP then
    gatehouse.setup(vim.json.decode(env.GATEHOUSE_SETUP))
  end

  vim.ui.select = function(items, opts, on_choice)
    table.insert(report.asked, { items = items, prompt = opts.prompt })
    if answer == "never" then
      return -- an asynchronous picker nobody answers
    end
    if answer == "default" then
      return on_choice(items[1], 1) -- what Enter on a pre-selected first item picks
    end
    for idx, item in ipairs(items) do
      if item == answer then
        return on_choice(item, idx)
      end
    end
    on_choice(nil, nil)
  end

  vim.cmd("GatehouseChat " .. env.GATEHOUSE_PROMPT)
  local stopped = false
  local done = vim.wait(60000, function()
    local buf = gatehouse._state.buf
    local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
    if text ~= report.snapshots[#report.snapshots] then
      table.insert(report.snapshots, text)
    end
    if scenario == "stop" and not stopped and text:find("Thinking", 1, true) then
      stopped = true
      vim.cmd("GatehouseStop")
    end
    return not gatehouse._state.running
  end, 10)
  report.finished = done
  if scenario == "new" then -- a second prompt continues the session; after :GatehouseNew, not
    report.sessions = { gatehouse._state.session_id }
    for _, command in ipairs({ "", "GatehouseNew" }) do
      if command ~= "" then
        vim.cmd(command)
      end
      vim.cmd("GatehouseChat " .. env.GATEHOUSE_PROMPT)
      vim.wait(60000, function()
        return not gatehouse._state.running
      end, 10)
      table.insert(report.sessions, gatehouse._state.session_id)
    end
  end
  vim.wait(3000, function()
    return gatehouse._state.model ~= nil -- agent/status, asked after the turn
  end, 10)
end)
if not ok then
  table.insert(report.errors, tostring(err))
end
finish()
