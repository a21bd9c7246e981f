-- Display safety: how model-written text is shown to a person (the rule of
-- server/protocol/display.py, tested against docs/schema/display-safety.json).
-- C0/C1 controls and DEL are shown as \xNN, other hidden characters (bidi overrides and
-- isolates, zero-width and invisible format characters) as <U+XXXX>. Tabs and newlines stay;
-- CRLF is shown as a newline, a lone CR as \x0d.
local M = {}

M.HIDDEN_RANGES = {
  { 0x0000, 0x0008 }, { 0x000B, 0x000C }, { 0x000E, 0x001F }, { 0x007F, 0x009F },
  { 0x00AD, 0x00AD }, { 0x034F, 0x034F }, { 0x061C, 0x061C }, { 0x115F, 0x1160 },
  { 0x17B4, 0x17B5 }, { 0x180E, 0x180E }, { 0x200B, 0x200F }, { 0x2028, 0x202E },
  { 0x2060, 0x2064 }, { 0x2066, 0x206F }, { 0x3164, 0x3164 }, { 0xFEFF, 0xFEFF },
  { 0xFFA0, 0xFFA0 }, { 0xFFF9, 0xFFFB }, { 0x1D173, 0x1D17A }, { 0xE0000, 0xE007F },
}

local function hidden(code)
  for _, range in ipairs(M.HIDDEN_RANGES) do
    if code >= range[1] and code <= range[2] then
      return true
    end
  end
  return false
end

local function escape(code)
  if code <= 0x9F then
    return string.format("\\x%02x", code)
  end
  return string.format("<U+%04X>", code)
end

-- The code point at byte i of s and the byte after it; a byte that starts no valid UTF-8
-- sequence is taken as the code point of that byte (and so shown as \xNN when it is >= 0x80).
local function decode(s, i)
  local c = s:byte(i)
  local n, code
  if c < 0x80 then
    return c, i + 1
  elseif c >= 0xF0 and c < 0xF8 then
    n, code = 3, c - 0xF0
  elseif c >= 0xE0 then
    n, code = 2, c - 0xE0
  elseif c >= 0xC2 and c < 0xE0 then
    n, code = 1, c - 0xC0
  else
    return c, i + 1, true
  end
  for k = 1, n do
    local b = s:byte(i + k)
    if b == nil or b < 0x80 or b > 0xBF then
      return c, i + 1, true
    end
    code = code * 64 + (b - 0x80)
  end
  return code, i + n + 1
end

-- Calls found(shown) for each hidden character and returns the display-safe text.
local function walk(text, found)
  local out = {}
  local i, len = 1, #text
  while i <= len do
    local code, next_i, invalid = decode(text, i)
    if code == 0x0D then
      if text:byte(next_i) == 0x0A then
        out[#out + 1] = "\n"
        next_i = next_i + 1
      else
        out[#out + 1] = "\\x0d"
        found("\\x0d")
      end
    elseif invalid or hidden(code) then
      local shown = invalid and string.format("\\x%02x", code) or escape(code)
      out[#out + 1] = shown
      found(shown)
    else
      out[#out + 1] = text:sub(i, next_i - 1)
    end
    i = next_i
  end
  return table.concat(out)
end

--- text with every hidden or control character shown visibly.
function M.visible(text)
  return walk(text or "", function() end)
end

--- The hidden characters of text, each once, in order, as visible() shows them.
function M.hidden_characters(text)
  local seen, list = {}, {}
  walk(text or "", function(shown)
    if not seen[shown] then
      seen[shown] = true
      list[#list + 1] = shown
    end
  end)
  return list
end

--- A sentence for an approval prompt when text hides characters, else nil.
function M.hidden_warning(text)
  local found = M.hidden_characters(text)
  if #found == 0 then
    return nil
  end
  local first = {}
  for k = 1, math.min(#found, 8) do
    first[k] = found[k]
  end
  local shown = table.concat(first, ", ") .. (#found > 8 and ", ..." or "")
  return "Warning: this contains hidden or control characters (" .. shown
    .. "); they are shown as escapes. Read it carefully."
end

return M
