# sandcell: R's user profile for code runs (R_PROFILE_USER). Graphics that
# open the default device go to PNG files in $SANDCELL_PLOTS, which the
# host reads back as plots: each device writes dev001-0001.png, ... (one a
# page), and at exit every device is closed and the pages are renamed, in
# order, to plot-0001.png, plot-0002.png, ... (64 at most; plot-more says
# that pages were dropped). Base R only; written into the cell by lang/.
invisible(local({
  d <- Sys.getenv("SANDCELL_PLOTS")
  if (!nzchar(d) || !isTRUE(capabilities("png")))
    return(NULL)
  dir.create(d, recursive = TRUE, showWarnings = FALSE, mode = "0700")
  k <- 0L
  options(device = function(...) {
    k <<- k + 1L
    grDevices::png(file.path(d, sprintf("dev%03d-%%04d.png", k)), width = 640, height = 480)
  })
  reg.finalizer(environment(), function(e) {
    grDevices::graphics.off()
    f <- sort(list.files(d, pattern = "^dev[0-9]{3}-[0-9]{4}[.]png$"))
    for (i in seq_len(min(length(f), 64L)))
      file.rename(file.path(d, f[i]), file.path(d, sprintf("plot-%04d.png", i)))
    if (length(f) > 64L)  # the rest is dropped: the host says so
      file.create(file.path(d, "plot-more"))
  }, onexit = TRUE)
  NULL
}))
