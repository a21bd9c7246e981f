-- Commands of the Gatehouse plug-in; the module loads on first use.
if vim.g.loaded_gatehouse then
  return
end
vim.g.loaded_gatehouse = true

vim.cmd([[
  command! -nargs=* GatehouseChat lua require("gatehouse").chat(<q-args>)
  command! GatehouseStop lua require("gatehouse").stop()
  command! GatehouseNew lua require("gatehouse").new()
]])
